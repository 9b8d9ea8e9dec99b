// Per node: which chunk header starts at each address, for O(1) "block address → chunk".
//
// One slot per smallest chunk (1 KiB) of the node's range; the slot of a chunk's base holds its
// header, every other slot is null. The chunk holding p is the chunk of level L that starts at
// align_down(p, size(L)) for the right L; checking the candidates from the smallest size up, the
// first non-null slot is it (every smaller candidate lies inside that chunk, where no other chunk
// starts). So a lookup reads at most `levels` slots (≤ 17): constant, whatever the chunk's age, the
// node, or how many chunks there are. The chunk layer keeps the slots right on every change of
// tiling (new root area, split, merge, enlarge), all under its lock.
//
// Readers do not take that lock (ms_deallocate checks ownership under the loader's lock only):
// slots are read and written atomically. A reader asking about its own in-use chunk reads only
// slots that cannot change while it holds the chunk (its base and the null slots inside it).
//
// The table is mapped by the library itself (reserved, then made read-write; pages are touched
// only where chunks start): 8 bytes per KiB of node, 0.78 % of the reserved range at most, 512 KiB
// for a 64 MiB node, 8 MiB for a 1 GiB class space of address space. RSS is one page per 512 KiB
// of the range in which chunks were ever carved.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstdint>

namespace metaspace {

struct Chunk;  // chunks/chunk.hpp: the table only stores and compares pointers to headers

class ChunkStartTable {
 public:
  ChunkStartTable() = default;
  ~ChunkStartTable();
  ChunkStartTable(const ChunkStartTable&) = delete;
  ChunkStartTable& operator=(const ChunkStartTable&) = delete;

  // Maps the slots for [base, base + range_bytes) at `unit_bytes` (the smallest chunk) per slot;
  // chunks are at most `root_bytes`. MS_OK or the os layer's error.
  ms_error_t init(const char* base, size_t range_bytes, size_t unit_bytes, size_t root_bytes);

  void set(const char* chunk_base, Chunk* c) {
    __atomic_store_n(&slots_[index(chunk_base)], c, __ATOMIC_RELEASE);
  }
  void clear(const char* chunk_base) { set(chunk_base, nullptr); }
  // The area [area_base, area_base + bytes) holds one chunk that starts at area_base: the pages
  // of its other slots (all null) go back to the kernel; they read as null again, so lock-free
  // readers see no difference.
  void release_area(const char* area_base, size_t bytes);
  Chunk* at(const char* chunk_base) const {
    return __atomic_load_n(&slots_[index(chunk_base)], __ATOMIC_ACQUIRE);
  }

  // The header of the chunk holding p (p inside the range), or null if p lies where no chunk was
  // carved yet.
  Chunk* find(const void* p) const {
    uintptr_t offset = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(base_);
    for (unsigned shift = unit_shift_; shift <= root_shift_; shift++) {
      Chunk* c = __atomic_load_n(&slots_[(offset >> shift << shift) >> unit_shift_],
                                 __ATOMIC_ACQUIRE);
      if (c != nullptr) return c;
    }
    return nullptr;
  }

  size_t mapped_bytes() const { return mapped_bytes_; }

 private:
  size_t index(const char* p) const {
    return static_cast<size_t>(p - base_) >> unit_shift_;
  }

  const char* base_ = nullptr;
  Chunk** slots_ = nullptr;
  size_t mapped_bytes_ = 0;
  unsigned unit_shift_ = 0;
  unsigned root_shift_ = 0;
};

}  // namespace metaspace
