#include "vspace/node_map.hpp"

#include <algorithm>

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

NodeMap::NodeMap(size_t root_chunk_bytes, std::atomic<size_t>* committed)
    : shift_(log2_of_power_of_2(root_chunk_bytes)), committed_(committed) {}

ms_error_t NodeMap::init() {
  MS_ASSERT(range_ == nullptr, "node map set up twice");
  size_t slots = kInitialSlots;
  while (slots < 4 * (kCoveredBytes >> shift_) && slots < kMaxSlots) slots *= 2;
  max_slots_ = slots;
  region_bytes_ = max_slots_ * sizeof(Slot);
  char* range = nullptr;
  if (ms_error_t err = os::reserve(2 * region_bytes_, os::page_size(), 0, &range); err != MS_OK) {
    return err;
  }
  regions_[0] = {reinterpret_cast<Slot*>(range), kInitialSlots - 1};
  regions_[1] = {reinterpret_cast<Slot*>(range + region_bytes_), 0};
  range_ = range;
  return MS_OK;
}

NodeMap::~NodeMap() {
  if (range_ == nullptr) return;
  if (committed_ != nullptr) committed_->fetch_sub(committed_bytes(), std::memory_order_relaxed);
  KeepLastError keep;  // a refused munmap leaks address space, never memory
  if (os::release(range_, 2 * region_bytes_) != MS_OK) {
    (void)os::uncommit(range_, 2 * region_bytes_, os::Uncommitted::kReadsZeros);
  }
}

void NodeMap::count(int r, size_t bytes) {
  if (bytes <= dirty_bytes_[r]) return;
  if (committed_ != nullptr) {
    committed_->fetch_add(bytes - dirty_bytes_[r], std::memory_order_relaxed);
  }
  dirty_bytes_[r] = bytes;
}

ms_error_t NodeMap::prepare(int r, size_t bytes) {
  size_t need = align_up(bytes, os::page_size());
  if (need > region_bytes_) {
    return fail(MS_ERR_RESERVE_FAILED, "node map full: %zu slots needed, room for %zu (the "
                "non-class nodes of %zu GiB at this root chunk size)", bytes / sizeof(Slot),
                max_slots_, kCoveredBytes >> 30);
  }
  char* base = reinterpret_cast<char*>(regions_[r].slots);
  MS_ASSERT(base != nullptr, "node map region %d not mapped", r);
  if (need > open_bytes_[r]) {
    if (ms_error_t err = os::commit(base + open_bytes_[r], need - open_bytes_[r]); err != MS_OK) {
      return err;
    }
    open_bytes_[r] = need;
  }
  // Left over from the table before last (its return was refused): cleared word by word, since a
  // stale reader may be reading it.
  Slot* slots = regions_[r].slots;
  for (size_t i = 0; i < dirty_bytes_[r] / sizeof(Slot); i++) {
    __atomic_store_n(&slots[i].key, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&slots[i].node, nullptr, __ATOMIC_RELAXED);
  }
  count(r, need);
  return MS_OK;
}

bool NodeMap::put(Region& r, uintptr_t key, VirtualSpaceNode* node) {
  for (size_t i = hash(key, r.mask);; i = (i + 1) & r.mask) {
    uintptr_t k = r.slots[i].key;
    if (k == key) {  // a tombstone of the same area (a node reserved again at a released address)
      __atomic_store_n(&r.slots[i].node, node, __ATOMIC_RELEASE);
      return false;
    }
    if (k == 0) {
      // Node first, then the key that makes the slot visible.
      __atomic_store_n(&r.slots[i].node, node, __ATOMIC_RELAXED);
      __atomic_store_n(&r.slots[i].key, key, __ATOMIC_RELEASE);
      return true;
    }
  }
}

ms_error_t NodeMap::rebuild(size_t entries) {
  uint64_t generation = rebuilds();
  int from = static_cast<int>(generation & 1);
  int to = from ^ 1;
  // Room for `entries` keys at most a quarter full: the next nodes go in without a rebuild each.
  size_t slots = kInitialSlots;
  while (slots < entries * 4) slots *= 2;
  if (ms_error_t err = prepare(to, slots * sizeof(Slot)); err != MS_OK) return err;
  Region& fresh = regions_[to];
  __atomic_store_n(&fresh.mask, slots - 1, __ATOMIC_RELEASE);
  const Region& old = regions_[from];
  used_ = 0;
  for (size_t i = 0; i <= old.mask; i++) {
    if (old.slots[i].key != 0 && old.slots[i].node != nullptr) {
      if (put(fresh, old.slots[i].key, old.slots[i].node)) used_++;
    }
  }
  // Filled before it is published: readers see the old table or the complete new one.
  __atomic_store_n(&generation_, generation + 1, __ATOMIC_RELEASE);
  // The old table's pages go back; they read as zeros to a reader still in them (which then
  // finds nothing, sees the generation moved, and looks again). Refused: kept and counted, and
  // cleared by hand before the region is used again.
  KeepLastError keep;
  if (os::uncommit(reinterpret_cast<char*>(old.slots), dirty_bytes_[from],
                   os::Uncommitted::kReadsZeros) == MS_OK) {
    if (committed_ != nullptr) {
      committed_->fetch_sub(dirty_bytes_[from], std::memory_order_relaxed);
    }
    dirty_bytes_[from] = 0;
  }
  return MS_OK;
}

ms_error_t NodeMap::add(const char* base, size_t bytes, VirtualSpaceNode* node) {
  MS_ASSERT(ok() && bytes > 0 && (bytes >> shift_ << shift_) == bytes, "node of %zu bytes",
            bytes);
  // At most half full, so probes stay short and always end at an empty slot. Rebuilt before the
  // first key goes in: a rebuild that fails leaves the map as it was.
  if (!has_table_) {
    if (ms_error_t err = prepare(0, kInitialSlots * sizeof(Slot)); err != MS_OK) return err;
    __atomic_store_n(&has_table_, true, __ATOMIC_RELEASE);  // readers need it only from now
  }
  size_t areas = bytes >> shift_;
  if ((used_ + areas) * 2 > slots()) {
    if (ms_error_t err = rebuild(live_ + areas); err != MS_OK) return err;
  }
  Region& r = regions_[rebuilds() & 1];
  for (size_t off = 0; off < bytes; off += size_t{1} << shift_) {
    if (put(r, key_of(base + off), node)) used_++;
    live_++;
  }
  return MS_OK;
}

void NodeMap::remove(const char* base, size_t bytes) {
  if (!has_table_) return;  // nothing was added
  const Region& t = current();
  for (size_t off = 0; off < bytes; off += size_t{1} << shift_) {
    uintptr_t key = key_of(base + off);
    for (size_t i = hash(key, t.mask);; i = (i + 1) & t.mask) {
      if (t.slots[i].key == key) {
        if (t.slots[i].node != nullptr) live_--;
        __atomic_store_n(&t.slots[i].node, nullptr, __ATOMIC_RELEASE);
        break;
      }
      if (t.slots[i].key == 0) break;
    }
  }
  // Nodes gone in numbers: a smaller table (the big one's pages go back). Not done, the big one
  // simply stays, if the kernel refuses the small one.
  if (t.mask + 1 > kInitialSlots && live_ * 16 <= t.mask + 1) {
    KeepLastError keep;
    (void)rebuild(live_);
  }
}

bool NodeMap::verify() const {
  if (!ok()) return true;
  if (!has_table_) {
    MS_VERIFY(live_ == 0 && used_ == 0 && committed_bytes() == 0,
              "node map without a table: %zu keys, %zu bytes counted", used_, committed_bytes());
    return true;
  }
  const Region& t = current();
  size_t keys = 0;
  size_t live = 0;
  for (size_t i = 0; i <= t.mask; i++) {
    uintptr_t k = __atomic_load_n(&t.slots[i].key, __ATOMIC_RELAXED);
    VirtualSpaceNode* n = __atomic_load_n(&t.slots[i].node, __ATOMIC_RELAXED);
    keys += k != 0;
    live += k != 0 && n != nullptr;
    MS_VERIFY(k != 0 || n == nullptr, "node map slot %zu: a node without a key", i);
  }
  MS_VERIFY(keys == used_ && live == live_, "node map: %zu keys (%zu live), counters %zu (%zu)",
            keys, live, used_, live_);
  MS_VERIFY(used_ * 2 <= t.mask + 1, "node map over half full: %zu keys in %zu slots", used_,
            t.mask + 1);
  MS_VERIFY(dirty_bytes_[rebuilds() & 1] >= (t.mask + 1) * sizeof(Slot),
            "node map table of %zu slots counted as %zu bytes", t.mask + 1,
            dirty_bytes_[rebuilds() & 1]);
  return true;
}

}  // namespace metaspace
