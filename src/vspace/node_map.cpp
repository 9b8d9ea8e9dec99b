#include "vspace/node_map.hpp"

#include "common/assert.hpp"
#include "common/units.hpp"

namespace metaspace {

namespace {
constexpr size_t kInitialSlots = 64;
}

NodeMap::NodeMap(size_t root_chunk_bytes)
    : shift_(log2_of_power_of_2(root_chunk_bytes)) {
  auto t = std::make_unique<Table>(Table{kInitialSlots - 1, std::make_unique<Slot[]>(kInitialSlots)});
  table_ = t.get();
  tables_.push_back(std::move(t));
}

NodeMap::~NodeMap() = default;

bool NodeMap::put(Table* t, uintptr_t key, VirtualSpaceNode* node) {
  for (size_t i = hash(key, t->mask);; i = (i + 1) & t->mask) {
    uintptr_t k = t->slots[i].key;
    if (k == key) {  // a tombstone of the same area (a node reserved again at a released address)
      __atomic_store_n(&t->slots[i].node, node, __ATOMIC_RELEASE);
      return false;
    }
    if (k == 0) {
      // Node first, then the key that makes the slot visible.
      __atomic_store_n(&t->slots[i].node, node, __ATOMIC_RELAXED);
      __atomic_store_n(&t->slots[i].key, key, __ATOMIC_RELEASE);
      return true;
    }
  }
}

void NodeMap::grow(size_t entries) {
  Table* old = table_;
  // Room for `entries` keys at most half full; a rebuild at the same size still drops the
  // tombstones of removed nodes.
  size_t slots = old->mask + 1;
  while (slots < entries * 2) slots *= 2;
  auto t = std::make_unique<Table>(Table{slots - 1, std::make_unique<Slot[]>(slots)});
  Table* fresh = t.get();
  tables_.push_back(std::move(t));
  used_ = 0;
  for (size_t i = 0; i <= old->mask; i++) {
    if (old->slots[i].key != 0 && old->slots[i].node != nullptr) {
      if (put(fresh, old->slots[i].key, old->slots[i].node)) used_++;
    }
  }
  // Filled before it is published: readers see the old table or the complete new one.
  __atomic_store_n(&table_, fresh, __ATOMIC_RELEASE);
}

void NodeMap::add(const char* base, size_t bytes, VirtualSpaceNode* node) {
  MS_ASSERT(bytes > 0 && (bytes >> shift_ << shift_) == bytes, "node of %zu bytes", bytes);
  // At most half full, so probes stay short and always end at an empty slot. Grown before the
  // first key goes in: a growth that fails (std::bad_alloc) leaves the map as it was.
  size_t areas = bytes >> shift_;
  if ((used_ + areas) * 2 > table_->mask + 1) grow(live_ + areas);
  for (size_t off = 0; off < bytes; off += size_t{1} << shift_) {
    if (put(table_, key_of(base + off), node)) used_++;
    live_++;
  }
}

void NodeMap::remove(const char* base, size_t bytes) {
  Table* t = table_;
  for (size_t off = 0; off < bytes; off += size_t{1} << shift_) {
    uintptr_t key = key_of(base + off);
    for (size_t i = hash(key, t->mask);; i = (i + 1) & t->mask) {
      if (t->slots[i].key == key) {
        if (t->slots[i].node != nullptr) live_--;
        __atomic_store_n(&t->slots[i].node, nullptr, __ATOMIC_RELEASE);
        break;
      }
      if (t->slots[i].key == 0) break;
    }
  }
}

size_t NodeMap::footprint_bytes() const {
  size_t total = 0;
  for (const auto& t : tables_) total += sizeof(Table) + (t->mask + 1) * sizeof(Slot);
  return total;
}

}  // namespace metaspace
