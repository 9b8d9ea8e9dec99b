#include "slab/page_store.hpp"

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
    base_ = nullptr;
    return;
  }
  // Read-write at once: one kernel call, one mapping. The reservation is MAP_NORESERVE, so
  // this costs neither memory nor commit charge; pages cost memory only once touched.
  if (os::commit(base_, bytes) != MS_OK) {
    os::release(base_, bytes);
    base_ = nullptr;
    return;
  }
  free_stack_ = reinterpret_cast<uint32_t*>(base_);
  first_page_ = align_up(pages_ * sizeof(uint32_t), page_bytes_) / page_bytes_;
  next_page_ = first_page_;
}

PageStore::~PageStore() {
  if (base_ != nullptr) os::release(base_, pages_ * page_bytes_);
}

size_t PageStore::stack_pages_for(size_t depth) const {
  return align_up(depth * sizeof(uint32_t), page_bytes_) / page_bytes_;
}

void PageStore::push_free(uint32_t index) {
  free_stack_[free_count_++] = index;
  size_t needed = stack_pages_for(free_count_);
  if (needed > stack_committed_pages_) {
    committed_pages_ += needed - stack_committed_pages_;
    stack_committed_pages_ = needed;
  }
}

void PageStore::push_empty(uint32_t index) {
  *reinterpret_cast<uint32_t*>(page(index)) = empty_head_;
  empty_head_ = index;
  empty_count_++;
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
  if (free_count_ > 0) {
    uint32_t index = free_stack_[--free_count_];
    committed_pages_++;
    pages_in_use_++;
    return page(index);
  }
  return allocate_pages(1);
}

char* PageStore::allocate_pages(size_t pages) {
  MS_ASSERT(ok() && pages > 0, "bad page request of %zu pages", pages);
  if (pages > pages_ - next_page_) {
    fail(MS_ERR_OUT_OF_MEMORY, "bookkeeping range of %zu bytes exhausted",
         pages_ * page_bytes_);
    return nullptr;
  }
  char* p = page(static_cast<uint32_t>(next_page_));
  next_page_ += pages;
  committed_pages_ += pages;
  pages_in_use_ += pages;
  return p;
}

void PageStore::free_pages(char* p, size_t pages) {
  MS_ASSERT(contains(p) && is_aligned(p, page_bytes_) && pages <= pages_in_use_,
            "%zu pages at %p were not handed out here", pages, (void*)p);
  for (size_t i = 0; i < pages; i++) {
    uint32_t index = index_of(p + i * page_bytes_);
    pages_in_use_--;
    if (options_.return_at_once &&
        os::uncommit(page(index), page_bytes_, /*protect=*/false) == MS_OK) {
      committed_pages_--;
      push_free(index);
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
    if (os::uncommit(page(index), page_bytes_, /*protect=*/false) != MS_OK) break;
    empty_head_ = next;
    empty_count_--;
    committed_pages_--;
    push_free(index);
  }
  size_t needed = stack_pages_for(free_count_);
  if (stack_committed_pages_ > needed &&
      os::uncommit(base_ + needed * page_bytes_, (stack_committed_pages_ - needed) * page_bytes_,
                   /*protect=*/false) == MS_OK) {
    committed_pages_ -= stack_committed_pages_ - needed;
    stack_committed_pages_ = needed;
  }
  return (before - committed_pages_) * page_bytes_;
}

bool PageStore::verify() const {
  if (!ok()) return true;
  size_t empties = 0;
  for (uint32_t i = empty_head_; i != kNone; i = *reinterpret_cast<const uint32_t*>(page(i))) {
    MS_VERIFY(i >= first_page_ && i < next_page_, "empty page index %u outside [%zu, %zu)", i,
              first_page_, next_page_);
    MS_VERIFY(++empties <= empty_count_, "empty page list longer than %zu", empty_count_);
  }
  MS_VERIFY(empties == empty_count_, "%zu empty pages listed, counter says %zu", empties,
            empty_count_);
  MS_VERIFY(next_page_ - first_page_ == pages_in_use_ + empty_count_ + free_count_,
            "%zu pages handed out ever, %zu in use + %zu empty + %zu free",
            next_page_ - first_page_, pages_in_use_, empty_count_, free_count_);
  MS_VERIFY(committed_pages_ == pages_in_use_ + empty_count_ + stack_committed_pages_,
            "%zu committed pages, %zu in use + %zu empty + %zu of stack", committed_pages_,
            pages_in_use_, empty_count_, stack_committed_pages_);
  MS_VERIFY(stack_committed_pages_ >= stack_pages_for(free_count_),
            "free-page stack deeper than its committed pages");
  return true;
}

}  // namespace metaspace
