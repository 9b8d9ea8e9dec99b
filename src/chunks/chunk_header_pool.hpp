// Slab pool of chunk headers, recycled through a free list; used under the chunk manager's lock.
#pragma once

#include <memory>
#include <vector>

#include "chunks/chunk.hpp"

namespace metaspace {

class ChunkHeaderPool {
 public:
  Chunk* allocate();
  void release(Chunk* c);

  size_t in_use() const { return in_use_; }
  size_t capacity() const { return slabs_.size() * kSlabHeaders; }
  size_t footprint_bytes() const { return capacity() * sizeof(Chunk); }

  bool verify() const;

 private:
  static constexpr size_t kSlabHeaders = 256;
  std::vector<std::unique_ptr<Chunk[]>> slabs_;
  size_t slab_used_ = kSlabHeaders;  // headers handed out from the newest slab
  Chunk* free_ = nullptr;
  size_t free_count_ = 0;
  size_t in_use_ = 0;
};

}  // namespace metaspace
