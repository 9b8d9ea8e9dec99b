// Address → node in O(1), for every node: a hash table keyed by root chunk area number
// (address >> log2(root chunk size); nodes are aligned to the root chunk size, so each area lies
// in exactly one node), with one entry per area of every node.
//
// Written only under the owning chunk manager's lock (a node is added or removed), read without
// it: ms_deallocate looks up the node of a block under the loader's lock alone. So entries are
// read and written atomically, a removed area leaves a tombstone (key kept, node null), and a
// table that fills up is replaced by a larger copy published atomically. Replaced tables are
// kept until the map dies, so a reader still probing one reads valid memory; they are at most as
// large as the final table together (capacity doubles), a few KiB for hundreds of nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace metaspace {

class VirtualSpaceNode;

class NodeMap {
 public:
  explicit NodeMap(size_t root_chunk_bytes);
  ~NodeMap();
  NodeMap(const NodeMap&) = delete;
  NodeMap& operator=(const NodeMap&) = delete;

  // Caller holds the writers' lock. Maps every root area of [base, base + bytes) to `node`.
  void add(const char* base, size_t bytes, VirtualSpaceNode* node);
  void remove(const char* base, size_t bytes);

  // The node whose range holds p, or null. Lock-free.
  VirtualSpaceNode* find(const void* p) const {
    const Table* t = __atomic_load_n(&table_, __ATOMIC_ACQUIRE);
    uintptr_t key = key_of(p);
    for (size_t i = hash(key, t->mask);; i = (i + 1) & t->mask) {
      uintptr_t k = __atomic_load_n(&t->slots[i].key, __ATOMIC_ACQUIRE);
      if (k == key) return __atomic_load_n(&t->slots[i].node, __ATOMIC_ACQUIRE);
      if (k == 0) return nullptr;
    }
  }

  size_t entries() const { return live_; }
  size_t footprint_bytes() const;

 private:
  struct Slot {
    uintptr_t key;  // area number + 1; 0 = never used
    VirtualSpaceNode* node;  // null: tombstone
  };
  struct Table {
    size_t mask;
    std::unique_ptr<Slot[]> slots;
  };

  uintptr_t key_of(const void* p) const { return (reinterpret_cast<uintptr_t>(p) >> shift_) + 1; }
  static size_t hash(uintptr_t key, size_t mask) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }
  // True if the key is new to the table (else a tombstone of it was revived).
  static bool put(Table* t, uintptr_t key, VirtualSpaceNode* node);
  // A fresh table with room for `entries` keys, published when filled.
  void grow(size_t entries);

  const unsigned shift_;
  Table* table_;
  std::vector<std::unique_ptr<Table>> tables_;  // the current one last
  size_t used_ = 0;  // keys in the current table, tombstones included
  size_t live_ = 0;
};

}  // namespace metaspace
