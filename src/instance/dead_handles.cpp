#include "instance/dead_handles.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/assert.hpp"
#include "common/verify.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

static_assert(DeadHandles::kCapacities[std::size(DeadHandles::kCapacities) - 1] ==
              DeadHandles::kRemembered);

DeadHandles::DeadHandles(SlabAllocator& storage, SlabAllocator& objects)
    : storage_(storage),
      objects_(objects),
      base_(reinterpret_cast<uintptr_t>(objects.range_base())) {
  objects_.set_side_bytes(kSideBytes);
}

DeadHandles::~DeadHandles() {
  if (ring_ != nullptr) free_storage(ring_, capacity_);
}

void* DeadHandles::allocate_storage(size_t capacity) {
  return capacity == kInlineCapacity ? inline_storage_
                                     : storage_.allocate(storage_bytes(capacity));
}

void DeadHandles::free_storage(void* storage, size_t capacity) {
  if (capacity != kInlineCapacity) storage_.free(storage, storage_bytes(capacity));
}

bool DeadHandles::contains(uintptr_t h) const {
  if (h - base_ > UINT32_MAX || count_ == 0) return false;
  auto offset = static_cast<uint32_t>(h - base_);
  // The whole ring: a slot not in use is 0 (never an offset), as reserve() left it. No early
  // exit, so that the compiler vectorizes the scan (125 ns for 1 024 handles, SSE2).
  uint32_t found = 0;
  for (size_t i = 0; i < capacity_; i++) found |= ring_[i] == offset;
  return found != 0;
}

bool DeadHandles::contains_allocated(uintptr_t h) {
  ensure_marks(object_of(h));
  return (*mark_of(h) & bit_of(h)) != 0;
}

void DeadHandles::ensure_marks(const void* object) {
  if (page_stamped(object)) return;
  size_t bytes;
  unsigned char* area = SlabAllocator::side_area(object, kSideBytes, &bytes);
  std::memset(area, 0, bytes);
  const uint64_t* page = SlabAllocator::side_stamp(object);  // names the page
  for (size_t i = 0, p = oldest_; i < count_; i++, p = next(p)) {
    uintptr_t h = handle_at(p);
    if (SlabAllocator::side_stamp(object_of(h)) == page) *mark_of(h) |= bit_of(h);
  }
  __atomic_store_n(SlabAllocator::side_stamp(object), stamp_for(object), __ATOMIC_RELAXED);
}

bool DeadHandles::reserve(size_t n) {
  if (n > kRemembered) n = kRemembered;
  if (n <= capacity_) return true;
  size_t capacity = *std::find_if(std::begin(kCapacities), std::end(kCapacities),
                                  [&](size_t c) { return c >= n; });
  auto* ring = static_cast<uint32_t*>(allocate_storage(capacity));
  if (ring == nullptr) return false;  // MS_ERR_OUT_OF_MEMORY recorded
  for (size_t i = 0, p = oldest_; i < count_; i++, p = next(p)) ring[i] = ring_[p];
  std::fill(ring + count_, ring + capacity, 0u);  // the slots not in use (contains)
  if (ring_ != nullptr) free_storage(ring_, capacity_);
  ring_ = ring;
  capacity_ = capacity;
  oldest_ = 0;
  return true;
}

void DeadHandles::add(uintptr_t h) {
  MS_ASSERT(h > base_ && h - base_ <= UINT32_MAX && !contains(h),
            "dead handle %#zx outside the range or added twice", static_cast<size_t>(h));
  MS_ASSERT(count_ < capacity_ || count_ == kRemembered,
            "no room reserved for a dead handle (%zu of %zu)", count_, capacity_);
  size_t position;
  if (count_ == kRemembered) {
    position = oldest_;
    oldest_ = next(oldest_);
    // Forgotten: its mark goes, if its page still holds marks (committed, stamped); a page given
    // back has none, and gets them anew from the ring when it is used again.
    // (A stamped page is committed: one given back reads zeros, and reading it costs nothing.)
    uintptr_t old = handle_at(position);
    if (page_stamped(object_of(old))) *mark_of(old) &= ~bit_of(old);
  } else {
    position = oldest_ + count_ < capacity_ ? oldest_ + count_ : oldest_ + count_ - capacity_;
    count_++;
  }
  ring_[position] = static_cast<uint32_t>(h - base_);
  ensure_marks(object_of(h));  // (the ring holds h already)
  *mark_of(h) |= bit_of(h);
}

bool DeadHandles::verify() const {
  MS_VERIFY(count_ <= capacity_ && capacity_ <= kRemembered &&
                (capacity_ == 0 || oldest_ < capacity_),
            "dead handles: %zu of %zu (at most %zu), oldest at %zu", count_, capacity_,
            kRemembered, oldest_);
  uint32_t sorted[kRemembered];
  for (size_t i = 0, p = oldest_; i < count_; i++, p = next(p)) {
    MS_VERIFY(ring_[p] != 0, "dead handle %zu of %zu is 0", i, count_);
    sorted[i] = ring_[p];
  }
  for (size_t i = count_, p = (oldest_ + count_) % std::max<size_t>(capacity_, 1); i < capacity_;
       i++, p = next(p)) {
    MS_VERIFY(ring_[p] == 0, "dead handle ring slot %zu is not in use but holds %#x", p, ring_[p]);
  }
  std::sort(sorted, sorted + count_);
  MS_VERIFY(std::adjacent_find(sorted, sorted + count_) == sorted + count_,
            "a dead handle is remembered twice");
  // Per page (the sorted offsets come page by page): on a committed, stamped page the marks are
  // exactly its remembered handles.
  for (size_t i = 0; i < count_;) {
    uintptr_t h = base_ + sorted[i];
    const void* object = object_of(h);
    const uint64_t* stamp = SlabAllocator::side_stamp(object);
    size_t end = i;
    while (end < count_ && SlabAllocator::side_stamp(object_of(base_ + sorted[end])) == stamp) {
      end++;
    }
    if (page_stamped(object)) {
      MS_VERIFY(objects_.page_committed(object), "dead handle %#zx: its page is stamped but not "
                "committed", static_cast<size_t>(h));
      size_t bits = 0;
      for (size_t k = i; k < end; k++) {
        uintptr_t d = base_ + sorted[k];
        MS_VERIFY(*mark_of(d) & bit_of(d), "dead handle %#zx is not marked at its place",
                  static_cast<size_t>(d));
      }
      size_t bytes;
      const unsigned char* area = SlabAllocator::side_area(object, kSideBytes, &bytes);
      for (size_t k = 0; k < bytes; k++) bits += static_cast<size_t>(std::popcount(area[k]));
      MS_VERIFY(bits == end - i, "page of dead handle %#zx: %zu marks for %zu handles",
                static_cast<size_t>(h), bits, end - i);
    }
    i = end;
  }
  return true;
}

bool DeadHandles::marked(uintptr_t h) const {
  return page_stamped(object_of(h)) && (*mark_of(h) & bit_of(h)) != 0;
}

}  // namespace metaspace
