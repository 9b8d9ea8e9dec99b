#include "instance/dead_handles.hpp"

#include <bit>
#include <cstring>

#include "common/assert.hpp"
#include "common/verify.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

static_assert(std::has_single_bit(DeadHandles::kRemembered) &&
                  2 * DeadHandles::kRemembered < 0xFFFF,
              "ring positions fit the 16-bit index");

DeadHandles::~DeadHandles() {
  if (storage_ != nullptr) free_storage(storage_, capacity_);
}

void* DeadHandles::allocate_storage(size_t capacity) {
  return capacity == kInlineCapacity ? inline_storage_ : slabs_.allocate(storage_bytes(capacity));
}

void DeadHandles::free_storage(void* storage, size_t capacity) {
  if (capacity != kInlineCapacity) slabs_.free(storage, storage_bytes(capacity));
}

size_t DeadHandles::home(uint32_t offset) const {
  // Handles differ in their tag (low bits) and in slab positions: mix before taking top bits.
  uint64_t x = (uint64_t{offset} ^ (uint64_t{offset} >> 17)) * 0x9E3779B97F4A7C15u;
  return static_cast<size_t>(x >> (64 - std::countr_zero(index_slots())));
}

uint16_t DeadHandles::find(uint32_t h) const {
  if (count_ == 0) return kEmpty;
  size_t mask = index_slots() - 1;
  for (size_t i = home(h);; i = (i + 1) & mask) {
    uint16_t position = index_[i];
    if (position == kEmpty) return kEmpty;
    if (ring_[position] == h) return position;
  }
}

void DeadHandles::insert_index(uint16_t position) {
  size_t mask = index_slots() - 1;
  size_t i = home(ring_[position]);
  while (index_[i] != kEmpty) i = (i + 1) & mask;
  index_[i] = position;
}

void DeadHandles::erase_index(uint32_t h) {
  size_t mask = index_slots() - 1;
  size_t i = home(h);
  while (ring_[index_[i]] != h) i = (i + 1) & mask;  // h is there: its caller remembers it
  // Backward shift: move later entries of the probe run into the gap while their home allows,
  // so that no lookup meets an empty slot before its entry (no tombstones to accumulate).
  for (size_t j = (i + 1) & mask; index_[j] != kEmpty; j = (j + 1) & mask) {
    size_t k = home(ring_[index_[j]]);
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    index_[i] = index_[j];
    i = j;
  }
  index_[i] = kEmpty;
}

bool DeadHandles::reserve(size_t n) {
  if (n > kRemembered) n = kRemembered;
  if (n <= capacity_) return true;
  size_t capacity = std::bit_ceil(n < kInlineCapacity ? kInlineCapacity : n);
  void* storage = allocate_storage(capacity);
  if (storage == nullptr) return false;  // MS_ERR_OUT_OF_MEMORY recorded
  auto* ring = static_cast<uint32_t*>(storage);
  for (size_t i = 0; i < count_; i++) ring[i] = ring_[(oldest_ + i) & (capacity_ - 1)];
  if (storage_ != nullptr) free_storage(storage_, capacity_);
  storage_ = storage;
  ring_ = ring;
  index_ = reinterpret_cast<uint16_t*>(ring + capacity);
  capacity_ = capacity;
  oldest_ = 0;
  std::memset(index_, 0xFF, index_slots() * sizeof(uint16_t));
  for (size_t i = 0; i < count_; i++) insert_index(static_cast<uint16_t>(i));
  return true;
}

void DeadHandles::add(uintptr_t handle) {
  MS_ASSERT(handle > base_ && handle - base_ <= UINT32_MAX && !contains(handle),
            "dead handle %#zx outside the range or added twice", static_cast<size_t>(handle));
  uint32_t h = static_cast<uint32_t>(handle - base_);
  MS_ASSERT(count_ < capacity_ || count_ == kRemembered,
            "no room reserved for a dead handle (%zu of %zu)", count_, capacity_);
  size_t position;
  if (count_ == kRemembered) {
    position = oldest_;
    erase_index(ring_[position]);
    oldest_ = (oldest_ + 1) & (capacity_ - 1);
  } else {
    position = (oldest_ + count_) & (capacity_ - 1);
    count_++;
  }
  ring_[position] = h;
  insert_index(static_cast<uint16_t>(position));
}

bool DeadHandles::verify() const {
  MS_VERIFY(count_ <= capacity_ && capacity_ <= kRemembered, "dead handles: %zu of %zu (at most %zu)",
            count_, capacity_, kRemembered);
  if (capacity_ == 0) return true;
  MS_VERIFY(std::has_single_bit(capacity_) && oldest_ < capacity_,
            "dead handles: capacity %zu, oldest at %zu", capacity_, oldest_);
  for (size_t i = 0; i < count_; i++) {
    size_t position = (oldest_ + i) & (capacity_ - 1);
    MS_VERIFY(ring_[position] != 0, "dead handle %zu of %zu is 0", i, count_);
    MS_VERIFY(find(ring_[position]) == position,
              "dead handle at offset %#x not found at ring position %zu", ring_[position], position);
  }
  size_t entries = 0;
  for (size_t i = 0; i < index_slots(); i++) {
    if (index_[i] == kEmpty) continue;
    entries++;
    MS_VERIFY(index_[i] < capacity_ && (index_[i] - oldest_ + capacity_) % capacity_ < count_,
              "dead handle index slot %zu names ring position %u, not in use", i, index_[i]);
  }
  MS_VERIFY(entries == count_, "dead handle index holds %zu entries for %zu handles", entries,
            count_);
  return true;
}

}  // namespace metaspace
