// Address → node in O(1), for every node: a hash table keyed by root chunk area number
// (address >> log2(root chunk size); nodes are aligned to the root chunk size, so each area lies
// in exactly one node), with one entry per area of every node.
//
// Written only under the owning chunk manager's lock (a node is added or removed), read without
// it: ms_deallocate looks up the node of a block under the loader's lock alone. So entries are
// read and written atomically and a removed area leaves a tombstone (key kept, node null).
//
// Bounded memory under churn. A table that fills up (with live keys and tombstones) is rebuilt
// without the tombstones, at the size the live keys need, and published atomically. The map used
// to keep every replaced table until it died (a reader might still be probing one), so it grew
// with the number of nodes ever added. Now there are exactly two table regions in one range the
// map maps itself (os layer), used in turn: a rebuild fills the region not in use, publishes it by
// raising a generation number, and gives the old region's pages back (madvise: they read as
// zeros, still mapped). A reader that started on the old region may then read zeros or, after two
// more rebuilds, a newer table in it - even halves of two tables: a slot's key from the old one
// and its node from the new one, where the slot now holds another area (seen under churn: 1 wrong
// node in ~3 M lookups, NodeMapConcurrency). So every lookup, hit or miss, checks afterwards that
// the generation did not move (a seqlock's reader) and otherwise looks again in the current table:
// a lookup that must succeed (the node was added before it began and is still there) always
// returns that node, for one more load of the generation.
// Memory: the current table (16 bytes per slot; a rebuild sizes it to 4 slots per live area,
// rounded up to a power of 2, at least 64; a removal that leaves it 1/16 live rebuilds it
// smaller) plus, only if the kernel refused to take the old
// region back, that one. Counted in `committed`.
//
// Each region has room for the slots of kCoveredBytes of nodes (4 per root area; address space
// only, opened read-write as first needed and then kept open, like the page store's range): 2 MiB
// of address space for both regions at 4 MiB root chunks, 128 MiB (kMaxSlots) at 64 KiB. A node
// beyond that is refused (MS_ERR_RESERVE_FAILED).
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace metaspace {

class VirtualSpaceNode;

class NodeMap {
 public:
  // `committed` (if given) follows the bytes of table pages the map holds.
  NodeMap(size_t root_chunk_bytes, std::atomic<size_t>* committed = nullptr);
  ~NodeMap();
  NodeMap(const NodeMap&) = delete;
  NodeMap& operator=(const NodeMap&) = delete;

  // Reserves the range (separate from the constructor so that a class space placed at a
  // requested base reserves it first). MS_OK or the os layer's error. The first table is made
  // by the first add(): a space that never needs the map (VirtualSpaceList finds its first node
  // by its range) pays no page for it.
  ms_error_t init();
  bool ok() const { return range_ != nullptr; }

  // Caller holds the writers' lock. Maps every root area of [base, base + bytes) to `node`.
  // MS_OK, or the os layer's error (a rebuild could not be mapped) with the map unchanged.
  ms_error_t add(const char* base, size_t bytes, VirtualSpaceNode* node);
  void remove(const char* base, size_t bytes);

  // The node whose range holds p, or null. Lock-free.
  VirtualSpaceNode* find(const void* p) const {
    if (!__atomic_load_n(&has_table_, __ATOMIC_ACQUIRE)) return nullptr;  // nothing added yet
    uintptr_t key = key_of(p);
    for (;;) {
      uint64_t generation = __atomic_load_n(&generation_, __ATOMIC_ACQUIRE);
      const Region& r = regions_[generation & 1];
      size_t mask = __atomic_load_n(&r.mask, __ATOMIC_ACQUIRE);
      VirtualSpaceNode* found = nullptr;
      // Bounded: a region being rebuilt under a stale reader may hold no empty slot.
      for (size_t i = hash(key, mask), n = 0; n <= mask; i = (i + 1) & mask, n++) {
        uintptr_t k = __atomic_load_n(&r.slots[i].key, __ATOMIC_ACQUIRE);
        if (k == key) {
          found = __atomic_load_n(&r.slots[i].node, __ATOMIC_ACQUIRE);
          break;
        }
        if (k == 0) break;
      }
      // The slot loads are acquire: this load is not done before them.
      if (__atomic_load_n(&generation_, __ATOMIC_ACQUIRE) == generation) return found;
    }
  }

  size_t entries() const { return live_; }
  // Writers' side: a table was made (something was added once).
  bool has_table() const { return has_table_; }
  // Table pages held (the current table, and the old one if its return was refused).
  // Writers' side (caller holds the writers' lock).
  size_t committed_bytes() const { return dirty_bytes_[0] + dirty_bytes_[1]; }
  size_t slots() const { return current().mask + 1; }
  uint64_t rebuilds() const { return __atomic_load_n(&generation_, __ATOMIC_ACQUIRE); }

  bool verify() const;

  static constexpr size_t kInitialSlots = 64;
  static constexpr size_t kMaxSlots = size_t{1} << 22;
  // The non-class nodes a map has room for: 64 GiB (a metaspace's non-class space holds a few
  // hundred MiB in a large JVM).
  static constexpr size_t kCoveredBytes = size_t{64} << 30;

 private:
  struct Slot {
    uintptr_t key;  // area number + 1; 0 = never used
    VirtualSpaceNode* node;  // null: tombstone
  };
  struct Region {
    Slot* slots;  // fixed: the region's base
    size_t mask;  // slots in the table it holds - 1
  };

  const Region& current() const { return regions_[rebuilds() & 1]; }
  uintptr_t key_of(const void* p) const { return (reinterpret_cast<uintptr_t>(p) >> shift_) + 1; }
  static size_t hash(uintptr_t key, size_t mask) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }
  // True if the key is new to the table (else a tombstone of it was revived).
  static bool put(Region& r, uintptr_t key, VirtualSpaceNode* node);
  // Rebuilds the live keys into the other region with room for `entries` keys and publishes it.
  ms_error_t rebuild(size_t entries);
  // Makes the first `bytes` of region r usable: read-write, zero, counted.
  ms_error_t prepare(int r, size_t bytes);
  void count(int r, size_t bytes);

  const unsigned shift_;
  std::atomic<size_t>* const committed_;
  char* range_ = nullptr;       // both regions
  size_t region_bytes_ = 0;
  size_t max_slots_ = 0;  // per region
  size_t open_bytes_[2] = {};   // read-write prefix of each region
  size_t dirty_bytes_[2] = {};  // prefix of each region that may hold memory (counted)
  Region regions_[2] = {};
  uint64_t generation_ = 0;     // the current table is regions_[generation_ & 1]
  bool has_table_ = false;      // the first table is made (by the first add)
  size_t used_ = 0;  // keys in the current table, tombstones included
  size_t live_ = 0;
};

}  // namespace metaspace
