// Chunk headers, from the space's bookkeeping slabs. Headers are reserved on a free list so that
// a split (which needs one header per level it goes down) can be promised before it starts:
// reserve() first, and the split itself cannot fail halfway. ChunkManager::take_chunk reserves
// what the split of the chunk it found needs (and one more for a new root chunk), nothing for
// later. Released headers go back to the slab allocator at once, so the pool holds only what
// was reserved and not yet used: a header kept for later sits in some slab page and can be what
// keeps that page (kept spares, or levels + 1 reserved for every take, hold a slab page more
// through the lab's unload traces: bench/analysis.md, "Moved from code comments"). Used under
// the chunk manager's lock.
#pragma once

#include <cstddef>
#include <memory>

#include "chunks/chunk.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

class ChunkHeaderPool {
 public:
  explicit ChunkHeaderPool(SlabAllocator& slabs) : slabs_(&slabs) {}
  // A pool with a private bookkeeping range, for tests of the layers that use it.
  ChunkHeaderPool();
  ~ChunkHeaderPool();
  ChunkHeaderPool(const ChunkHeaderPool&) = delete;
  ChunkHeaderPool& operator=(const ChunkHeaderPool&) = delete;

  // Makes sure the next `headers` allocate() calls succeed; false (error set) if the bookkeeping
  // is out of memory, with nothing changed that matters.
  bool reserve(size_t headers);
  // A reset header, or null (MS_ERR_OUT_OF_MEMORY recorded) if none was reserved and the
  // bookkeeping refuses.
  Chunk* allocate();
  // Gives the header back to the slabs (not to the pool: see above).
  void release(Chunk* c);

  size_t in_use() const { return in_use_; }
  size_t pooled() const { return free_count_; }

  bool verify() const;

 private:
  std::unique_ptr<SlabAllocator> own_slabs_;
  SlabAllocator* slabs_;
  Chunk* free_ = nullptr;
  size_t free_count_ = 0;
  size_t in_use_ = 0;
};

}  // namespace metaspace
