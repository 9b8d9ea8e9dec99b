// The handles of the loaders that died last, so that a runtime using a handle after destroying
// it gets MS_ERR_DESTROYED (docs/guarantees.md) while the dead loader's object goes back at once.
//
// Before, the promise was kept by the objects themselves: a dead loader's 144-byte object stayed
// in its slab (a quarantine of 1 024) and said "dead". Those objects pinned their slab pages:
// replaying the lab's jdk25-many-loaders trace, 372 of the 425 loader objects at the worst sample
// were dead (16 slab pages; footprint/live 1.0487, 1.0426 with no quarantine), and recordings of
// the same program with more loaders per wave kept 44 pages of them (1.1168 → 1.1000). Now a
// handle is the object's address plus a tag (include/metaspace/detail/loader_head.h, MS__HANDLE_TAG_MASK),
// the object is reused at once, and this set remembers the last kRemembered dead handles: a new
// loader's tag is chosen so that its handle is none of them (LoaderRegistry::create), so a
// remembered handle never names a live loader, and the slow paths look a handle up here when its
// object does not carry it.
//
// Two parts, 4 bytes per remembered handle:
// - A FIFO ring of the handles (each its 32-bit offset from the base of the loader objects'
//   range: 4 GiB at most, 16-byte aligned objects plus the tag), so that forgetting the oldest is
//   O(1). From the bookkeeping slabs (counted as overhead), grown as loaders die: nothing while
//   none died, 128 bytes inside this object for the first 32, then shared-page objects of 512
//   bytes and 1 KiB (128 and 256 handles), then a page (512 handles, and 1 024).
// - Marks where the handles' objects were: per loader object place, 2 side bytes at the end of
//   its slab page (SlabAllocator::set_side_bytes: room a 4 KiB page of 31 loader objects leaves
//   anyway), one bit per tag that is remembered dead for that place. Choosing a new loader's tag
//   reads its place's bits: O(1), one load from the page the object lies on.
// The marks are exact on every committed page whose stamp word is valid: a death sets its bit,
// forgetting a handle clears it while the page is committed (in use, or empty and kept for the
// next purge), and a page the kernel took back reads zeros, so its stamp is invalid and its
// marks are made anew from the ring when an object is next carved there (a scan of at most
// 1 024 handles, once per page the kernel gave back). The exact lookup of any handle (a call
// with a stale handle, on an error path) scans the ring.
//
// Before, an open-addressing index of ring positions made every lookup O(1) and cost 4 more
// bytes per handle: 8 KiB at 1 024 handles, two pages. At the lab's jdk25-ml-10-20-60 worst
// sample (after its wave 9's deaths, 7.63 MB live, more than 512 handles) that second page was
// what kept footprint/live at 1.0504, above 1.05; with the marks, 1.0498. A ring alone, scanned
// on every create, cost 125 ns per loader made (1 024 handles, SSE2), twice a create and destroy.
//
// Not thread-safe: the metaspace's registry lock guards it (and the marks: only this class
// writes them, under that lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <climits>

#include <metaspace/detail/loader_head.h>

#include "slab/slab_allocator.hpp"

namespace metaspace {

class DeadHandles {
 public:
  static constexpr size_t kRemembered = 1024;
  // Side bytes per loader object: one bit per tag.
  static constexpr uint32_t kSideBytes = 2;
  static_assert(MS__HANDLE_TAG_MASK < 8 * kSideBytes);

  // `storage`: where the ring's storage comes from. `objects`: the loader objects' allocator;
  // every handle added lies in [its range base, + 4 GiB) and names a slab object of it. Sets the
  // objects' side bytes, so it must be made before `objects` makes its first page.
  DeadHandles(SlabAllocator& storage, SlabAllocator& objects);
  ~DeadHandles();
  DeadHandles(const DeadHandles&) = delete;
  DeadHandles& operator=(const DeadHandles&) = delete;

  // Room for `n` handles (at most kRemembered is ever needed), so that that many add() calls
  // allocate nothing. False with MS_ERR_OUT_OF_MEMORY recorded, nothing changed.
  bool reserve(size_t n);
  // Remembers h (not 0, not remembered yet), forgetting the oldest once kRemembered are held.
  // h's object is still allocated (its page is committed). The room must have been reserved.
  void add(uintptr_t h);
  // Exact, for any value: a scan of the ring (up to kRemembered handles; the error paths).
  bool contains(uintptr_t h) const;
  // For a handle whose object is allocated now (a new loader's, before it is handed out): whether
  // it is remembered. O(1): its place's mark (made anew first if its page's stamp is not valid).
  bool contains_allocated(uintptr_t h);

  // For a live loader's handle (verify): its page is stamped and its place's mark for its tag is
  // set; a live loader's handle never is.
  bool marked(uintptr_t h) const;
  // The page holding `object` carries valid marks (its stamp); every page holding a loader
  // object does (verify). The stamp mixes the stamp word's own address, so that neither a page
  // given back (zeros) nor another page's stamp reads as it.
  static bool page_stamped(const void* object) {
    return __atomic_load_n(SlabAllocator::side_stamp(object), __ATOMIC_RELAXED) ==
           stamp_for(object);
  }

  size_t size() const { return count_; }
  size_t capacity() const { return capacity_; }
  // Bytes of bookkeeping it holds.
  size_t bytes() const { return storage_bytes(capacity_); }

  // The ring holds count_ distinct handles, none 0, all in the objects' range; on every committed
  // page with a valid stamp the marks are exactly the remembered handles of its places.
  bool verify() const;

  // Handles held in this object itself; storage for more comes from the slabs.
  static constexpr size_t kInlineCapacity = 32;
  // The ring's sizes as it grows: the first inside this object (128 bytes, as the ring and
  // index of 16 it replaced), then shared-page objects of 512 bytes and 1 KiB, then a page for
  // 512 handles and for 1 024. (A size below 304 bytes would take a slab page of its own; a
  // 2 016-byte step of 504 left a hole in a shared page once the ring outgrew it.)
  static constexpr size_t kCapacities[] = {kInlineCapacity, 128, 256, 512, kRemembered};
  static size_t storage_bytes(size_t capacity) { return capacity * sizeof(uint32_t); }

 private:
  // The object a handle names (the handle without its tag), its place's mark word, and the
  // tag's bit in it.
  static const void* object_of(uintptr_t h) {
    return reinterpret_cast<const void*>(h & ~MS__HANDLE_TAG_MASK);
  }
  static uint16_t* mark_of(uintptr_t h) {
    return reinterpret_cast<uint16_t*>(SlabAllocator::side_of(object_of(h), kSideBytes));
  }
  static uint16_t bit_of(uintptr_t h) {
    return static_cast<uint16_t>(1u << (h & MS__HANDLE_TAG_MASK));
  }
  static uint64_t stamp_for(const void* object) {
    auto at = reinterpret_cast<uint64_t>(SlabAllocator::side_stamp(object));
    return (at * 0x9E3779B97F4A7C15u) | 1;
  }
  // Unless the page holding `object` (allocated, or its page committed) is stamped: makes its
  // marks from the ring and stamps it.
  void ensure_marks(const void* object);
  uintptr_t handle_at(size_t position) const { return base_ + ring_[position]; }
  size_t next(size_t position) const { return position + 1 == capacity_ ? 0 : position + 1; }

  void* allocate_storage(size_t capacity);
  void free_storage(void* storage, size_t capacity);

  SlabAllocator& storage_;
  SlabAllocator& objects_;
  const uintptr_t base_;
  uint32_t* ring_ = nullptr;  // offsets from base_; oldest at ring_[oldest_], count_ in all, wrapping
  size_t capacity_ = 0;       // one of kCapacities, or 0
  size_t count_ = 0;
  size_t oldest_ = 0;
  alignas(uint32_t) unsigned char inline_storage_[kInlineCapacity * sizeof(uint32_t)];
};

}  // namespace metaspace
