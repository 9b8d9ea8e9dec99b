// The handles of the loaders that died last, so that a runtime using a handle after destroying
// it gets MS_ERR_DESTROYED (docs/guarantees.md) while the dead loader's object goes back at once.
//
// Before, the promise was kept by the objects themselves: a dead loader's 144-byte object stayed
// in its slab (a quarantine of 1 024) and said "dead". Those objects pinned their slab pages:
// replaying the lab's jdk25-many-loaders trace, 372 of the 425 loader objects at the worst sample
// were dead (16 slab pages; footprint/live 1.0487, 1.0426 with no quarantine), and recordings of
// the same program with more loaders per wave kept 44 pages of them (1.1168 → 1.1000). Now a
// handle is the object's address plus a tag (include/metaspace/metaspace.h, MS__HANDLE_TAG_MASK),
// the object is reused at once, and this set remembers the last kRemembered dead handles: a new
// loader's tag is chosen so that its handle is none of them (Metaspace::create_loader), so a
// remembered handle never names a live loader, and the slow paths look a handle up here when its
// object does not carry it.
//
// A FIFO ring of handles with an open-addressing index (ring positions, linear probing,
// deletion by backward shift): add, lookup and forgetting the oldest are O(1). A handle is kept
// as its 32-bit offset from the base of the loader objects' range (4 GiB at most: 16-byte
// aligned objects plus the tag), so 8 bytes per remembered handle (8 KiB for 1 024, against the
// 147 KiB of a full quarantine), from the bookkeeping slabs (counted as overhead), grown by
// doubling as loaders die: nothing while none died. (Sized for the live loaders as well, so that
// a death never allocates, it cost the traces without deaths a page: the lab's jdk25-version
// 1.0107 → 1.0118.) A death whose room cannot be had keeps its object (Metaspace::destroy_loader).
//
// Not thread-safe: the metaspace's registry lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <climits>

namespace metaspace {

class SlabAllocator;

class DeadHandles {
 public:
  static constexpr size_t kRemembered = 1024;

  // `base`: where the range of the handles' objects starts; every handle added lies in
  // [base, base + 4 GiB). The first storage (16 handles, 128 bytes) lies in this object; larger
  // ones come from `slabs`. (A slab page of its own for the first 16 cost the lab's smallest
  // trace with deaths — its Unload program recorded with class-data sharing, 352 KB live — 0.012
  // of footprint/live; a fixed 128 bytes per metaspace does not grow with the loaders.)
  DeadHandles(SlabAllocator& slabs, uintptr_t base) : slabs_(slabs), base_(base) {}
  ~DeadHandles();
  DeadHandles(const DeadHandles&) = delete;
  DeadHandles& operator=(const DeadHandles&) = delete;

  // Room for `n` handles (at most kRemembered is ever needed), so that that many add() calls
  // allocate nothing. False with MS_ERR_OUT_OF_MEMORY recorded, nothing changed.
  bool reserve(size_t n);
  // Remembers h (not 0, not remembered yet), forgetting the oldest once kRemembered are held.
  // The room must have been reserved.
  void add(uintptr_t h);
  bool contains(uintptr_t h) const {
    return h - base_ <= UINT32_MAX && find(static_cast<uint32_t>(h - base_)) != kEmpty;
  }

  size_t size() const { return count_; }
  size_t capacity() const { return capacity_; }
  // Bytes of bookkeeping it holds.
  size_t bytes() const { return storage_bytes(capacity_); }

  // The ring and the index agree: every remembered handle is found at its ring position, the
  // index holds exactly count_ entries, each reachable from its home slot.
  bool verify() const;

  // Handles held in the metaspace object itself; storage for more comes from the slabs.
  static constexpr size_t kInlineCapacity = 16;
  // Bytes of storage for `capacity` handles: the ring's offsets, then the index (two slots each).
  static size_t storage_bytes(size_t capacity) {
    return capacity * (sizeof(uint32_t) + 2 * sizeof(uint16_t));
  }

 private:
  static constexpr uint16_t kEmpty = 0xFFFF;
  size_t index_slots() const { return 2 * capacity_; }
  size_t home(uint32_t offset) const;
  // The ring position holding the handle at `offset` from base_, or kEmpty.
  uint16_t find(uint32_t offset) const;
  void insert_index(uint16_t position);
  void erase_index(uint32_t offset);

  void* allocate_storage(size_t capacity);
  void free_storage(void* storage, size_t capacity);

  SlabAllocator& slabs_;
  const uintptr_t base_;
  // One allocation: ring_[capacity_] then index_[2 * capacity_].
  void* storage_ = nullptr;
  uint32_t* ring_ = nullptr;  // offsets from base_; oldest at ring_[oldest_], count_ in all, wrapping
  uint16_t* index_ = nullptr;  // ring positions, kEmpty where none
  size_t capacity_ = 0;        // a power of two, ≤ kRemembered
  size_t count_ = 0;
  size_t oldest_ = 0;
  alignas(uint32_t) unsigned char inline_storage_[kInlineCapacity * (sizeof(uint32_t) + 2 * sizeof(uint16_t))];
};

}  // namespace metaspace
