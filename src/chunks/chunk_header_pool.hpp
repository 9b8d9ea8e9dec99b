// Chunk headers, from the space's bookkeeping slabs. A few released headers are kept on a free
// list so that a split (which needs up to one header per level) can be promised before it
// starts: reserve() first, and the split itself cannot fail halfway. Beyond that reserve,
// released headers go back to the slab allocator, so the pool shrinks when chunks merge or nodes
// go (it used to keep every header ever made: 80 bytes per chunk at the high-water mark).
// Used under the chunk manager's lock.
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
  void release(Chunk* c);

  size_t in_use() const { return in_use_; }
  size_t pooled() const { return free_count_; }

  bool verify() const;

  // Released headers kept for the next split: enough for two splits from a root chunk.
  static constexpr size_t kKeep = 2 * 17;

 private:
  std::unique_ptr<SlabAllocator> own_slabs_;
  SlabAllocator* slabs_;
  Chunk* free_ = nullptr;
  size_t free_count_ = 0;
  size_t in_use_ = 0;
};

}  // namespace metaspace
