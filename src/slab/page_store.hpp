// Layer 1½: pages for the library's own bookkeeping, from a range the library reserves itself.
//
// Chunk headers, commit masks, loader objects and free-block structures used to come from malloc:
// uncounted, and never returned (1 M dead micro loaders left 1.44 GB in the process, 146 MB at
// 100 k). Here they live in one reserved range per space, handed out page by page, so the
// library can count them (they are part of `committed`) and give them back (madvise) when a page
// holds nothing any more.
//
//   [free-page stack | pages ......................... | never used ]
//   base_            first_page_                       next_page_    base_ + reserved
//
// A page is in one of four states: in use (owned by a slab or a large allocation), empty but
// still committed (linked through its first word, reused first, uncommitted by purge() — or at
// once with `return_at_once`), uncommitted and free (its index on the free-page stack, which lies
// at the start of the range and is itself committed only as deep as it was ever filled), or never
// used (beyond next_page_). Reuse order: committed empty pages first (no page fault), then the
// free-page stack (last freed first, O(1)), then fresh pages.
//
// Access rights: the whole range is made read-write once, when reserved (MAP_NORESERVE: no
// memory, no commit charge), so it stays one mapping and growing costs no kernel call.
// Uncommitting keeps the pages read-write (os::uncommit without protect, i.e. madvise).
//
// Not thread-safe: the slab allocator above it holds its lock.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstdint>

namespace metaspace {

class PageStore {
 public:
  struct Options {
    size_t reserve_bytes;  // address space for bookkeeping; a multiple of the page size
    bool return_at_once;   // uncommit a page as soon as it is empty (aggressive policy)
  };

  // Reserves the range; ok() tells whether that worked (the error is left set).
  explicit PageStore(const Options& options);
  ~PageStore();  // unmaps everything
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  bool ok() const { return base_ != nullptr; }
  size_t page_bytes() const { return page_bytes_; }
  bool contains(const void* p) const {
    return p >= base_ + first_page_ * page_bytes_ && p < base_ + next_page_ * page_bytes_;
  }

  // One page, or `pages` contiguous fresh pages; null with the error set. Contents undefined.
  char* allocate_page();
  char* allocate_pages(size_t pages);
  // Takes back pages handed out; never fails (an uncommit the kernel refuses leaves the page
  // committed and empty, to be tried again by the next purge).
  void free_pages(char* p, size_t pages);

  // Uncommits every empty committed page and the unused depth of the free-page stack.
  // Returns the bytes given back.
  size_t purge();

  // Pages in use or committed-empty, plus the committed part of the free-page stack.
  size_t committed_bytes() const { return committed_pages_ * page_bytes_; }
  size_t pages_in_use() const { return pages_in_use_; }
  size_t empty_committed_pages() const { return empty_count_; }

  bool verify() const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  uint32_t index_of(const char* p) const {
    return static_cast<uint32_t>(static_cast<size_t>(p - base_) / page_bytes_);
  }
  char* page(uint32_t index) const { return base_ + size_t{index} * page_bytes_; }
  // Pages of the stack area holding entries [0, depth).
  size_t stack_pages_for(size_t depth) const;
  void push_free(uint32_t index);
  void push_empty(uint32_t index);

  const Options options_;
  size_t page_bytes_;
  char* base_ = nullptr;
  size_t pages_ = 0;         // in the whole range
  size_t first_page_ = 0;    // first page after the free-page stack area
  size_t next_page_ = 0;     // first never-used page

  uint32_t* free_stack_ = nullptr;  // at base_
  size_t free_count_ = 0;
  size_t stack_committed_pages_ = 0;  // deepest the stack reached since the last purge, in pages

  uint32_t empty_head_ = kNone;  // committed empty pages, linked through their first word
  size_t empty_count_ = 0;

  size_t pages_in_use_ = 0;
  size_t committed_pages_ = 0;
};

}  // namespace metaspace
