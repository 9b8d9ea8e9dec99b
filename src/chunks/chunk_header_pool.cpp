#include "chunks/chunk_header_pool.hpp"

#include <new>
#include <type_traits>

#include "common/assert.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

ChunkHeaderPool::ChunkHeaderPool()
    : own_slabs_(std::make_unique<SlabAllocator>(
          SlabAllocator::Options{.reserve_bytes = 256 * MiB, .return_at_once = false})),
      slabs_(own_slabs_.get()) {}

ChunkHeaderPool::~ChunkHeaderPool() {
  while (free_ != nullptr) {
    Chunk* c = free_;
    free_ = c->next;
    slabs_->destroy(c);
  }
}

bool ChunkHeaderPool::reserve(size_t headers) {
  while (free_count_ < headers) {
    Chunk* c = slabs_->create<Chunk>();
    if (c == nullptr) return false;
    c->next = free_;
    free_ = c;
    free_count_++;
  }
  return true;
}

Chunk* ChunkHeaderPool::allocate() {
  if (free_ == nullptr && !reserve(1)) return nullptr;
  Chunk* c = free_;
  free_ = c->next;
  free_count_--;
  new (c) Chunk();  // a fresh header: its links cannot be copied (ChunkLink), only made
  in_use_++;
  return c;
}

void ChunkHeaderPool::release(Chunk* c) {
  MS_ASSERT(in_use_ > 0, "header %p released with none in use", (void*)c);
  in_use_--;
  // Reset first: a stale pointer to the header (a chunk returned twice) then reads kUnused, "no
  // longer a chunk", while the slot waits in the slab (which overwrites only its first word).
  // Freed, not destroy()ed: stores just before an object's destructor are dead to the compiler
  // (GCC dropped this reset), and a Chunk has nothing to destroy.
  static_assert(std::is_trivially_destructible_v<Chunk>);
  new (c) Chunk();
  slabs_->free(c, sizeof(Chunk));
}

bool ChunkHeaderPool::verify() const {
  size_t n = 0;
  for (Chunk* c = free_; c != nullptr; c = c->next) {
    MS_VERIFY(c->state == Chunk::State::kUnused, "pooled header %p is still marked in use",
              (void*)c);
    MS_VERIFY(++n <= free_count_, "pooled header list longer than %zu", free_count_);
  }
  MS_VERIFY(n == free_count_, "%zu pooled headers, counted %zu", free_count_, n);
  return true;
}

}  // namespace metaspace
