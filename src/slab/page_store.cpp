#include "slab/page_store.hpp"

#include <algorithm>

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

PageStore::PageStore(const Options& options) : options_(options), page_bytes_(os::page_size()) {
  size_t bytes = align_up(options.reserve_bytes, page_bytes_);
  pages_ = bytes / page_bytes_;
  MS_ASSERT(pages_ < kNone, "bookkeeping range of %zu pages cannot be indexed", pages_);
  if (os::reserve(bytes, page_bytes_, 0, &base_) != MS_OK) {
    if (options.name != nullptr) append_error(" for %s", options.name);
    base_ = nullptr;
    return;
  }
  bits_ = reinterpret_cast<uint64_t*>(base_);
  bits_per_page_ = page_bytes_ * 8;
  size_t bitmap_bytes = align_up(align_up(pages_, kBitsPerWord) / 8, page_bytes_);
  // The bitmap is written anywhere in it as pages are taken: open it now (128 KiB for 4 GiB).
  if (!ensure_open(bitmap_bytes)) {
    os::release(base_, bytes);
    base_ = nullptr;
    return;
  }
  bitmap_page_committed_.assign(bitmap_bytes / page_bytes_, 0);
  first_page_ = bitmap_bytes / page_bytes_;
  next_page_ = first_page_;
  hint_ = first_page_;
}

bool PageStore::ensure_open(size_t bytes) {
  if (bytes <= open_bytes_) return true;
  size_t end = std::min(align_up(bytes, kOpenStepBytes), pages_ * page_bytes_);
  if (os::commit(base_ + open_bytes_, end - open_bytes_) != MS_OK) return false;
  open_bytes_ = end;
  return true;
}

PageStore::~PageStore() {
  KeepLastError keep;  // a refused munmap on the way out is not the caller's error
  if (base_ != nullptr) os::release(base_, pages_ * page_bytes_);
}

void PageStore::set_taken(size_t index) {
  size_t bitmap_page = index / bits_per_page_;
  if (index >= kInlineWords * kBitsPerWord && !bitmap_page_committed_[bitmap_page]) {
    bitmap_page_committed_[bitmap_page] = 1;
    bitmap_committed_pages_++;
    committed_pages_++;
  }
  word(index / kBitsPerWord) |= uint64_t{1} << (index % kBitsPerWord);
}

void PageStore::clear_taken(size_t index) {
  word(index / kBitsPerWord) &= ~(uint64_t{1} << (index % kBitsPerWord));
  if (index < hint_) hint_ = index;
}

void PageStore::push_empty(uint32_t index) {
  *reinterpret_cast<uint32_t*>(page(index)) = empty_head_;
  empty_head_ = index;
  empty_count_++;
}

uint32_t PageStore::find_free() {
  size_t i = hint_;
  while (i < next_page_) {
    uint64_t bits = word(i / kBitsPerWord) | ((uint64_t{1} << (i % kBitsPerWord)) - 1);
    if (bits != ~uint64_t{0}) {
      size_t found = align_down(i, kBitsPerWord) + static_cast<size_t>(__builtin_ctzll(~bits));
      if (found >= next_page_) break;
      hint_ = found + 1;
      return static_cast<uint32_t>(found);
    }
    i = align_down(i, kBitsPerWord) + kBitsPerWord;
  }
  hint_ = next_page_;
  return kNone;
}

char* PageStore::allocate_page() {
  MS_ASSERT(ok(), "page store without a range");
  if (empty_head_ != kNone) {
    uint32_t index = empty_head_;
    empty_head_ = *reinterpret_cast<uint32_t*>(page(index));
    empty_count_--;
    pages_in_use_++;
    return page(index);
  }
  uint32_t index = find_free();
  if (index == kNone) return allocate_pages(1);
  set_taken(index);
  committed_pages_++;
  pages_in_use_++;
  return page(index);
}

char* PageStore::allocate_pages(size_t pages) {
  MS_ASSERT(ok() && pages > 0, "bad page request of %zu pages", pages);
  if (pages > pages_ - next_page_) {
    fail(MS_ERR_OUT_OF_MEMORY, "bookkeeping range of %zu bytes exhausted%s%s",
         pages_ * page_bytes_, options_.name != nullptr ? ": " : "",
         options_.name != nullptr ? options_.name : "");
    return nullptr;
  }
  size_t first = next_page_;
  if (!ensure_open((first + pages) * page_bytes_)) return nullptr;
  for (size_t i = 0; i < pages; i++) set_taken(first + i);
  next_page_ += pages;
  committed_pages_ += pages;
  pages_in_use_ += pages;
  return page(first);
}

void PageStore::free_pages(char* p, size_t pages) {
  MS_ASSERT(contains(p) && is_aligned(p, page_bytes_) && pages <= pages_in_use_,
            "%zu pages at %p were not handed out here", pages, (void*)p);
  for (size_t i = 0; i < pages; i++) {
    uint32_t index = index_of(p + i * page_bytes_);
    MS_ASSERT(taken(index), "page %u freed twice", index);
    pages_in_use_--;
    bool returned = false;
    if (options_.return_at_once) {
      // A refused uncommit only keeps the page for the next purge: it is not the error of the
      // operation that freed this bookkeeping, often the cleanup of a failed request whose own
      // error the caller must see (the fuzzer found a refused window carve reported as the
      // failed uncommit of the window record's page).
      KeepLastError keep;
      returned = os::uncommit(page(index), page_bytes_, os::Uncommitted::kReadsZeros) == MS_OK;
    }
    if (returned) {
      committed_pages_--;
      clear_taken(index);
    } else {
      push_empty(index);
    }
  }
}

size_t PageStore::purge() {
  size_t before = committed_pages_;
  while (empty_head_ != kNone) {
    uint32_t index = empty_head_;
    uint32_t next = *reinterpret_cast<uint32_t*>(page(index));
    if (os::uncommit(page(index), page_bytes_, os::Uncommitted::kReadsZeros) != MS_OK) break;
    empty_head_ = next;
    empty_count_--;
    committed_pages_--;
    clear_taken(index);
  }
  // Free pages at the top become never-used again: later searches stop lower.
  while (next_page_ > first_page_ && !taken(next_page_ - 1)) next_page_--;
  if (hint_ > next_page_) hint_ = next_page_;
  // Bitmap pages without a set bit go back.
  size_t words_per_page = page_bytes_ / sizeof(uint64_t);
  for (size_t b = 0; b < bitmap_page_committed_.size(); b++) {
    if (!bitmap_page_committed_[b]) continue;
    const uint64_t* w = bits_ + b * words_per_page;
    bool zero = true;
    for (size_t i = 0; i < words_per_page && zero; i++) zero = w[i] == 0;
    if (zero && os::uncommit(page(b), page_bytes_, os::Uncommitted::kReadsZeros) == MS_OK) {
      bitmap_page_committed_[b] = 0;
      bitmap_committed_pages_--;
      committed_pages_--;
    }
  }
  return (before - committed_pages_) * page_bytes_;
}

bool PageStore::verify() const {
  if (!ok()) return true;
  size_t empties = 0;
  for (uint32_t i = empty_head_; i != kNone; i = *reinterpret_cast<const uint32_t*>(page(i))) {
    MS_VERIFY(i >= first_page_ && i < next_page_ && taken(i),
              "empty page %u outside [%zu, %zu) or not taken", i, first_page_, next_page_);
    MS_VERIFY(++empties <= empty_count_, "empty page list longer than %zu", empty_count_);
  }
  MS_VERIFY(empties == empty_count_, "%zu empty pages listed, counter says %zu", empties,
            empty_count_);
  size_t taken_pages = 0;
  for (size_t i = first_page_; i < next_page_; i++) {
    if (taken(i)) {
      taken_pages++;
      MS_VERIFY(i < kInlineWords * kBitsPerWord || bitmap_page_committed_[i / bits_per_page_],
                "bit of page %zu in a returned page", i);
    } else {
      MS_VERIFY(i >= hint_, "free page %zu below the hint %zu", i, hint_);
    }
  }
  MS_VERIFY(taken_pages == pages_in_use_ + empty_count_, "%zu pages taken, %zu in use + %zu empty",
            taken_pages, pages_in_use_, empty_count_);
  MS_VERIFY(committed_pages_ == pages_in_use_ + empty_count_ + bitmap_committed_pages_,
            "%zu committed pages, %zu in use + %zu empty + %zu of bitmap", committed_pages_,
            pages_in_use_, empty_count_, bitmap_committed_pages_);
  return true;
}

}  // namespace metaspace
