// Layer 1½: pages for the library's own bookkeeping, from a range the library reserves itself.
//
// Chunk headers, loader objects and free-block structures used to come from malloc: uncounted,
// and never returned (1 M dead micro loaders left 1.44 GB in the process, 146 MB at 100 k). Here
// they live in reserved ranges (one for both spaces' structures, one for the loader objects),
// handed out page by page, so the library can count
// them (they are part of `committed`) and give them back (madvise) when a page holds nothing.
//
//   [taken bitmap | pages ............................. | never used ]
//   base_         first_page_                           next_page_    base_ + reserved
//
// A page below next_page_ is taken (its bit set: in use, or empty but still committed) or free
// (bit clear: uncommitted). Empty committed pages are linked through their first word and reused
// first (no page fault); purge() uncommits them — or free_pages() at once with `return_at_once`.
// Otherwise the lowest free page is reused (a hint keeps the search short), so bookkeeping stays
// packed at the bottom, and purge() lowers next_page_ over free pages at the top.
//
// The bitmap costs one bit per page and is committed only where bits are set: purge() gives back
// its pages that became all zero. (A stack of free page indices cost 4 bytes per free page and
// kept 1.2 MB after 1 M micro loaders died.)
//
// Access rights: the range is reserved inaccessible and opened read-write from the bottom, 1 MiB
// at a time, as the pages in use first reach it; an opened prefix stays open (one mapping, no
// kernel call while bookkeeping shrinks and grows again below it). Opening the whole 4 GiB range
// at once cost no memory, but every byte made writable counts against RLIMIT_DATA and, under
// strict overcommit (vm.overcommit_memory=2), against the commit charge: with it, ms_create failed
// under a 64 MiB data limit. Opening by the MiB costs one mprotect per MiB of bookkeeping.
//
// Not thread-safe: the slab allocator above it holds its lock.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace metaspace {

class PageStore {
 public:
  struct Options {
    size_t reserve_bytes;  // address space for bookkeeping; a multiple of the page size
    bool return_at_once;   // uncommit a page as soon as it is empty (aggressive policy)
    const char* name = nullptr;  // what the range is for and which settings size it (errors)
  };

  // Reserves the range; ok() tells whether that worked (the error is left set).
  explicit PageStore(const Options& options);
  ~PageStore();  // unmaps everything
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  bool ok() const { return base_ != nullptr; }
  size_t page_bytes() const { return page_bytes_; }
  // The start of the range: everything handed out lies above it (the bitmap comes first).
  const char* range_base() const { return base_; }
  bool contains(const void* p) const {
    return p >= base_ + first_page_ * page_bytes_ && p < base_ + next_page_ * page_bytes_;
  }

  // Inside the reserved range, whether or not a page there was ever handed out. Lock-free.
  bool in_range(const void* p) const {
    return base_ != nullptr && p >= base_ && p < base_ + pages_ * page_bytes_;
  }
  // [p, p + bytes) lies in the part opened read-write, which stays open: it can be read (zeros
  // where a page was given back), whatever was there.
  bool readable(const void* p, size_t bytes) const {
    return in_range(p) && static_cast<size_t>(static_cast<const char*>(p) - base_) <= open_bytes_ &&
           bytes <= open_bytes_ - static_cast<size_t>(static_cast<const char*>(p) - base_);
  }
  // The page holding p is committed: handed out, or empty and kept for the next purge (not given
  // back, so writing it faults nothing in). Caller holds the owner's lock.
  bool committed(const void* p) const {
    if (!contains(p)) return false;
    return taken(static_cast<size_t>(static_cast<const char*>(p) - base_) / page_bytes_);
  }
  // One page, or `pages` contiguous fresh pages; null with the error set. Contents undefined.
  char* allocate_page();
  char* allocate_pages(size_t pages);
  // Takes back pages handed out; never fails (an uncommit the kernel refuses leaves the page
  // committed and empty, to be tried again by the next purge).
  void free_pages(char* p, size_t pages);

  // Uncommits every empty committed page and the bitmap pages that hold no set bit.
  // Returns the bytes given back.
  size_t purge();

  // Pages in use or committed-empty, plus the committed pages of the bitmap.
  size_t committed_bytes() const { return committed_pages_ * page_bytes_; }
  size_t pages_in_use() const { return pages_in_use_; }
  size_t empty_committed_pages() const { return empty_count_; }

  bool verify() const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kBitsPerWord = 64;

  uint32_t index_of(const char* p) const {
    return static_cast<uint32_t>(static_cast<size_t>(p - base_) / page_bytes_);
  }
  char* page(size_t index) const { return base_ + index * page_bytes_; }
  // The bitmap's first words live here, not in its first page (see inline_bits_).
  uint64_t& word(size_t w) { return w < kInlineWords ? inline_bits_[w] : bits_[w]; }
  uint64_t word(size_t w) const { return w < kInlineWords ? inline_bits_[w] : bits_[w]; }
  bool taken(size_t index) const {
    return (word(index / kBitsPerWord) >> (index % kBitsPerWord)) & 1;
  }
  void set_taken(size_t index);
  void clear_taken(size_t index);
  void push_empty(uint32_t index);
  // Lowest free page in [hint_, next_page_), or kNone.
  uint32_t find_free();

  // Makes [base_, base_ + bytes) read-write if it is not yet; false with the error set.
  bool ensure_open(size_t bytes);
  static constexpr size_t kOpenStepBytes = size_t{1} << 20;

  const Options options_;
  size_t page_bytes_;
  size_t open_bytes_ = 0;     // [base_, base_ + open_bytes_) is read-write
  char* base_ = nullptr;
  size_t pages_ = 0;          // in the whole range
  size_t first_page_ = 0;     // first page after the bitmap
  size_t next_page_ = 0;      // first never-used page
  size_t hint_ = 0;           // no free page below it

  uint64_t* bits_ = nullptr;  // at base_
  // The bits of pages below kInlineWords * 64 (those after the bitmap's own pages: 480 pages,
  // 1.9 MiB of bookkeeping, with a 4 GiB range) are kept here, and the bitmap's first page is
  // written only when bookkeeping outgrows them: it cost every space a page (8 KiB a
  // metaspace; 0.1 % of live at the lab's many-loaders worst sample). Their words in the range
  // stay zero.
  static constexpr size_t kInlineWords = 8;
  uint64_t inline_bits_[kInlineWords] = {};
  size_t bits_per_page_ = 0;
  std::vector<uint8_t> bitmap_page_committed_;  // per bitmap page: written since last returned
  size_t bitmap_committed_pages_ = 0;

  uint32_t empty_head_ = kNone;  // committed empty pages, linked through their first word
  size_t empty_count_ = 0;

  size_t pages_in_use_ = 0;
  size_t committed_pages_ = 0;
};

}  // namespace metaspace
