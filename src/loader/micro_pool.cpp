#include "loader/micro_pool.hpp"

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

MicroPool::MicroPool(ChunkManager& nonclass, ChunkManager& klass, const Options& options)
    : options_(options) {
  ChunkManager* managers[2] = {&nonclass, &klass};
  for (int i = 0; i < 2; i++) {
    Space& s = spaces_[i];
    s.manager = managers[i];
    const ChunkGeometry& g = s.manager->geometry();
    size_t bytes = options_.chunk_bytes < g.root_bytes() ? options_.chunk_bytes : g.root_bytes();
    s.level = g.level_fitting(bytes);
    s.alignment = i == MS_SPACE_CLASS ? options_.class_alignment : kWordBytes;
  }
}

MicroPool::~MicroPool() {
  trim();
  for (const Space& s : spaces_) {
    MS_ASSERT(s.chunks == nullptr, "micro pool destroyed while loaders hold %zu bytes", s.live);
  }
}

bool MicroPool::new_chunk_locked(Space& s) {
  size_t bytes = s.manager->geometry().bytes(s.level);
  Chunk* c = s.manager->get_chunk(s.level, s.level, bytes);
  if (c == nullptr) return false;
  c->set_owner(this);
  c->used_bytes = 0;  // a shared chunk's used_bytes: what live loaders hold in it
  c->prev = nullptr;
  c->next = s.chunks;
  if (s.chunks != nullptr) s.chunks->prev = c;
  s.chunks = c;
  s.chunk_count++;
  Chunk* old = s.current;
  s.current = c;
  s.top = c->base;
  // The old current chunk goes back now if every loader with bytes in it died already.
  if (old != nullptr && old->used_bytes == 0) unlink_and_return_locked(s, old);
  return true;
}

void MicroPool::unlink_and_return_locked(Space& s, Chunk* c) {
  MS_ASSERT(c != s.current && c->used_bytes == 0, "returning shared chunk %p still in use",
            (void*)c->base);
  if (c->prev != nullptr) c->prev->next = c->next; else s.chunks = c->next;
  if (c->next != nullptr) c->next->prev = c->prev;
  c->prev = c->next = nullptr;
  s.chunk_count--;
  c->set_owner(nullptr);
  // In use and ours by construction; a refusal would mean corrupted lists, which verify reports.
  (void)s.manager->return_chunk(c);
}

MicroPool::Result MicroPool::allocate(MicroRecord& r, ms_space_t sp, size_t bytes, char** out) {
  MS_ASSERT(bytes > 0 && bytes % kWordBytes == 0, "pool request of %zu bytes", bytes);
  if (bytes > options_.chunk_bytes / kMaxBlockFraction) return Result::kGraduate;
  size_t held = 0;
  r.for_each_run([&](char*, size_t n) { held += n; });
  if (held + bytes > kMaxLoaderBytes) return Result::kGraduate;
  int runs = r.runs();
  std::lock_guard<std::mutex> guard(lock_);
  Space& s = space(sp);
  char* start = s.current == nullptr ? nullptr : align_up(s.top, s.alignment);
  bool fits = start != nullptr && bytes <= static_cast<size_t>(s.current->end() - start);
  // The run it extends: one that ends where the block starts, inside the current chunk.
  int extend = -1;
  if (fits && start != s.current->base) {
    for (int i = 0; i < runs; i++) {
      if (r.begin[i] + r.bytes[i] == start) extend = i;
    }
  }
  if (extend < 0 && runs == MicroRecord::kRuns) return Result::kGraduate;
  if (!fits) {
    if (!new_chunk_locked(s)) return Result::kFailed;
    start = s.current->base;
  }
  if (extend >= 0) {
    r.bytes[extend] += static_cast<uint32_t>(bytes);
  } else {
    r.begin[runs] = start;
    r.bytes[runs] = static_cast<uint32_t>(bytes);
  }
  s.top = start + bytes;
  s.current->used_bytes += bytes;
  s.live += bytes;
  *out = start;
  return Result::kDone;
}

void MicroPool::release(MicroRecord& r) {
  std::lock_guard<std::mutex> guard(lock_);
  r.for_each_run([&](char* begin, size_t n) {
    ms_space_t sp = space_of(begin);
    Space& s = space(sp);
    Chunk* c = s.manager->chunk_containing(begin);
    MS_ASSERT(c != nullptr && c->owner_is(this) && c->used_bytes >= n,
              "run %p of %zu bytes is not in a shared chunk", (void*)begin, n);
    c->used_bytes -= n;
    s.live -= n;
    if (c->used_bytes == 0 && c != s.current) unlink_and_return_locked(s, c);
  });
  r = MicroRecord{};
}

void MicroPool::trim() {
  std::lock_guard<std::mutex> guard(lock_);
  for (Space& s : spaces_) {
    Chunk* c = s.current;
    if (c == nullptr || c->used_bytes != 0) continue;
    s.current = nullptr;
    s.top = nullptr;
    unlink_and_return_locked(s, c);
  }
}

size_t MicroPool::live_bytes(ms_space_t sp) const {
  std::lock_guard<std::mutex> guard(lock_);
  return spaces_[sp].live;
}

size_t MicroPool::chunks(ms_space_t sp) const {
  std::lock_guard<std::mutex> guard(lock_);
  return spaces_[sp].chunk_count;
}

size_t MicroPool::free_in_chunks_bytes(ms_space_t sp) const {
  std::lock_guard<std::mutex> guard(lock_);
  const Space& s = spaces_[sp];
  std::lock_guard<std::mutex> manager_lock(s.manager->lock());
  size_t committed = 0;
  for (const Chunk* c = s.chunks; c != nullptr; c = c->next) {
    committed += s.manager->mask_committed_bytes(c);
  }
  return committed - s.live;
}

bool MicroPool::verify() const {
  std::lock_guard<std::mutex> guard(lock_);
  for (int i = 0; i < 2; i++) {
    const Space& s = spaces_[i];
    std::lock_guard<std::mutex> manager_lock(s.manager->lock());
    size_t n = 0, live = 0;
    bool current_listed = s.current == nullptr;
    for (const Chunk* c = s.chunks; c != nullptr; c = c->next) {
      MS_VERIFY(c->state == Chunk::State::kInUse && c->owner_is(this),
                "space %d: shared chunk %p is not in use by the pool", i, (void*)c->base);
      MS_VERIFY(c->level == s.level, "space %d: shared chunk %p has level %d, not %d", i,
                (void*)c->base, c->level, s.level);
      MS_VERIFY(c->used_bytes <= c->bytes && c->used_bytes <= s.manager->mask_committed_bytes(c),
                "space %d: shared chunk %p holds %zu live bytes, more than committed", i,
                (void*)c->base, c->used_bytes);
      MS_VERIFY(c->used_bytes > 0 || c == s.current,
                "space %d: shared chunk %p is empty and not current", i, (void*)c->base);
      MS_VERIFY(c->next == nullptr || c->next->prev == c, "space %d: chunk list broken", i);
      if (c == s.current) current_listed = true;
      live += c->used_bytes;
      n++;
    }
    MS_VERIFY(current_listed, "space %d: current shared chunk not listed", i);
    MS_VERIFY(n == s.chunk_count && live == s.live,
              "space %d: %zu shared chunks holding %zu bytes listed, counted %zu and %zu", i, n,
              live, s.chunk_count, s.live);
    MS_VERIFY(s.current == nullptr ||
                  (s.top >= s.current->base && s.top <= s.current->end()),
              "space %d: pool top %p outside the current chunk", i, (void*)s.top);
  }
  return true;
}

}  // namespace metaspace
