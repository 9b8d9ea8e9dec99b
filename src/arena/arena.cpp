#include "arena/arena.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

Arena::Arena(ChunkManager& chunks, GrowthPolicy policy, size_t alignment, ms__bump* window,
             bool fast_path, Arena* wastage)
    : chunks_manager_(chunks),
      policy_(std::move(policy)),
      alignment_(alignment),
      window_(window),
      fast_path_(fast_path && alignment <= kWordBytes),
      wastage_(wastage) {
  __atomic_store_n(&window_->top, nullptr, __ATOMIC_RELAXED);
  __atomic_store_n(&window_->end, nullptr, __ATOMIC_RELAXED);
}

Arena::~Arena() {
  park();
  chunks_manager_.return_chunks(chunks_);
}

char* Arena::top() const {
  return parked_ ? top_ : __atomic_load_n(&window_->top, __ATOMIC_RELAXED);
}

void Arena::park() {
  if (parked_) return;
  top_ = window_->top;
  end_ = window_->end;
  __atomic_store_n(&window_->top, nullptr, __ATOMIC_RELAXED);
  __atomic_store_n(&window_->end, nullptr, __ATOMIC_RELAXED);
  parked_ = true;
}

void Arena::publish() {
  if (!fast_path_ || !free_blocks_.empty() || chunks_ == nullptr) return;
  __atomic_store_n(&window_->top, top_, __ATOMIC_RELAXED);
  __atomic_store_n(&window_->end, end_, __ATOMIC_RELAXED);
  parked_ = false;
}

void* Arena::allocate(size_t bytes) {
  park();
  slow_allocations_++;
  size_t n = align_up(bytes, kWordBytes);
  void* p = free_blocks_.empty() ? nullptr : allocate_from_free_blocks(n);
  if (p == nullptr) p = allocate_from_chunks(n);
  if (p != nullptr) __atomic_fetch_add(&window_->allocs, 1, __ATOMIC_RELAXED);
  publish();
  return p;
}

void* Arena::allocate_from_free_blocks(size_t bytes) {
  size_t got = 0;
  char* p = static_cast<char*>(free_blocks_.take(bytes, &got));
  if (p == nullptr) return nullptr;
  if (got > bytes) give_away(p + bytes, got - bytes);
  return p;
}

void Arena::give_away(char* p, size_t bytes) {
  if (wastage_ != nullptr) {
    wastage_->add_wastage(p, bytes);
  } else {
    free_blocks_.add(p, bytes);
  }
}

void Arena::add_wastage(char* p, size_t bytes) {
  park();
  free_blocks_.add(p, bytes);
}

void* Arena::allocate_from_chunks(size_t bytes) {
  // A large alignment rounds the block up; the gap behind it goes to the wastage arena, so the
  // next block starts aligned and the gap is not lost.
  size_t need = align_up(bytes, alignment_);
  char* p = nullptr;
  Bump result = bump_current(need, &p);
  if (result == Bump::kFailed) return nullptr;
  if (result == Bump::kNoRoom) {
    Chunk* c = chunks_;
    int next_level = policy_.level_at(chunk_count_);
    // Grow in place only up to what the policy would hand out next anyway: micro loaders stay
    // small, and a request that does not fit a doubled chunk gets a chunk of its own.
    bool enlarged = c != nullptr && c->level - 1 >= next_level &&
                    static_cast<size_t>(top_ - c->base) + need <= 2 * c->bytes &&
                    chunks_manager_.attempt_enlarge(c);
    if (!enlarged && !new_chunk(need)) return nullptr;
    if (bump_current(need, &p) != Bump::kDone) return nullptr;
  }
  if (need > bytes) give_away(p + bytes, need - bytes);
  return p;
}

Arena::Bump Arena::bump_current(size_t bytes, char** out) {
  Chunk* c = chunks_;
  if (c == nullptr || bytes > static_cast<size_t>(c->end() - top_)) return Bump::kNoRoom;
  if (bytes > static_cast<size_t>(end_ - top_)) {
    ms_error_t err =
        chunks_manager_.ensure_committed(c, static_cast<size_t>(top_ - c->base) + bytes);
    end_ = c->base + c->committed_bytes;
    if (err != MS_OK) return Bump::kFailed;
  }
  *out = top_;
  top_ += bytes;
  return Bump::kDone;
}

bool Arena::new_chunk(size_t bytes) {
  const ChunkGeometry& geometry = chunks_manager_.geometry();
  int fit = geometry.level_fitting(bytes);
  int preferred = std::min(policy_.level_at(chunk_count_), fit);
  Chunk* c = chunks_manager_.get_chunk(preferred, fit, bytes);
  if (c == nullptr) return false;
  if (chunks_ != nullptr) salvage(chunks_, top_);
  c->next = chunks_;
  chunks_ = c;
  chunk_count_++;
  top_ = c->base;
  end_ = c->base + c->committed_bytes;
  return true;
}

void Arena::salvage(Chunk* c, char* top) {
  char* committed_end = c->base + c->committed_bytes;
  c->used_bytes = static_cast<size_t>(std::max(top, committed_end) - c->base);
  if (committed_end > top) give_away(top, static_cast<size_t>(committed_end - top));
}

void Arena::deallocate(void* p, size_t bytes) {
  park();
  free_blocks_.add(p, align_up(bytes, kWordBytes));
}

bool Arena::owns(const void* p, size_t bytes) const {
  const char* start = static_cast<const char*>(p);
  for (const Chunk* c = chunks_; c != nullptr; c = c->next) {
    const char* used_end = c == chunks_ ? top() : c->base + c->used_bytes;
    if (start >= c->base && start < used_end) {
      return bytes <= static_cast<size_t>(used_end - start);
    }
  }
  return false;
}

ArenaStats Arena::stats_locked() const {
  ArenaStats s;
  s.free_blocks_bytes = free_blocks_.bytes();
  s.free_blocks_count = free_blocks_.count();
  s.foreign_free_bytes = free_blocks_.foreign_bytes();
  for (const Chunk* c = chunks_; c != nullptr; c = c->next) {
    s.chunks++;
    s.capacity_bytes += c->bytes;
    s.committed_bytes += chunks_manager_.mask_committed_bytes(c);
    s.consumed_bytes += c == chunks_ ? static_cast<size_t>(top() - c->base) : c->used_bytes;
    s.chunks_by_level[c->level]++;
  }
  return s;
}

bool Arena::verify() const {
  if (!free_blocks_.verify()) return false;
  size_t n = 0;
  for (const Chunk* c = chunks_; c != nullptr; c = c->next) {
    MS_VERIFY(c->state == Chunk::State::kInUse, "arena chunk %p is not in use", (void*)c->base);
    n++;
  }
  MS_VERIFY(n == chunk_count_, "arena lists %zu chunks, counted %zu", n, chunk_count_);
  if (chunks_ == nullptr) {
    MS_VERIFY(parked_, "arena without chunks has a live window");
    return true;
  }
  const Chunk* c = chunks_;
  char* t = top();
  char* e = parked_ ? end_ : __atomic_load_n(&window_->end, __ATOMIC_RELAXED);
  MS_VERIFY(t >= c->base && t <= e && e <= c->base + c->committed_bytes,
            "arena bump state [%p, %p) outside the committed part of chunk %p", (void*)t,
            (void*)e, (void*)c->base);
  MS_VERIFY(is_aligned(t, alignment_), "arena top %p not aligned to %zu", (void*)t, alignment_);
  MS_VERIFY(parked_ || free_blocks_.empty(), "fast path live while free blocks wait");
  return true;
}

}  // namespace metaspace
