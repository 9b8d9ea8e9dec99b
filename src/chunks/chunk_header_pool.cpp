#include "chunks/chunk_header_pool.hpp"

#include "common/verify.hpp"

namespace metaspace {

Chunk* ChunkHeaderPool::allocate() {
  Chunk* c;
  if (free_ != nullptr) {
    c = free_;
    free_ = c->next;
    free_count_--;
  } else {
    if (slab_used_ == kSlabHeaders) {
      slabs_.push_back(std::make_unique<Chunk[]>(kSlabHeaders));
      slab_used_ = 0;
    }
    c = &slabs_.back()[slab_used_++];
  }
  *c = Chunk{};
  in_use_++;
  return c;
}

void ChunkHeaderPool::release(Chunk* c) {
  *c = Chunk{};
  c->next = free_;
  free_ = c;
  free_count_++;
  in_use_--;
}

bool ChunkHeaderPool::verify() const {
  size_t n = 0;
  for (Chunk* c = free_; c != nullptr; c = c->next) {
    MS_VERIFY(c->state == Chunk::State::kUnused, "pooled header %p is still marked in use",
              (void*)c);
    n++;
  }
  MS_VERIFY(n == free_count_, "%zu pooled headers, counted %zu", free_count_, n);
  size_t handed_out = slabs_.empty() ? 0 : (slabs_.size() - 1) * kSlabHeaders + slab_used_;
  MS_VERIFY(handed_out == in_use_ + free_count_, "%zu headers handed out, %zu in use + %zu free",
            handed_out, in_use_, free_count_);
  return true;
}

}  // namespace metaspace
