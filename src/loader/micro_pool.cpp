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
  for ([[maybe_unused]] const Space& s : spaces_) {
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
  // The old current chunk's rest becomes the tail window; the old tail goes back now if every
  // loader with bytes in it died already.
  Chunk* old_tail = s.tail;
  s.tail = s.current;
  s.tail_top = s.top;
  s.current = c;
  s.top = c->base;
  if (old_tail != nullptr) return_if_unused_locked(s, old_tail);
  return true;
}

void MicroPool::return_if_unused_locked(Space& s, Chunk* c) {
  if (c->used_bytes == 0 && c != s.current && c != s.tail) unlink_and_return_locked(s, c);
}

void MicroPool::unlink_and_return_locked(Space& s, Chunk* c) {
  MS_ASSERT(c != s.current && c != s.tail && c->used_bytes == 0,
            "returning shared chunk %p still in use", (void*)c->base);
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
  if (bytes > options_.chunk_bytes / kMaxBlockFraction) return graduate();
  size_t held = 0;
  r.for_each_run([&](char*, size_t n) { held += n; });
  if (held + bytes > kMaxLoaderBytes) return graduate();
  int runs = r.runs();
  std::lock_guard<std::mutex> guard(lock_);
  Space& s = space(sp);
  size_t alignment = s.alignment;
  // Where the block may go, best first: the current chunk, this space's tail, and for
  // non-class blocks the class tail (8-byte aligned there too).
  Window windows[3] = {{&s, s.current, &s.top}, {&s, s.tail, &s.tail_top}, {nullptr, nullptr, nullptr}};
  if (sp == MS_SPACE_NONCLASS) {
    Space& k = space(MS_SPACE_CLASS);
    windows[2] = {&k, k.tail, &k.tail_top};
  }
  auto start_in = [&](const Window& w) -> char* {
    if (w.chunk == nullptr) return nullptr;
    char* start = align_up(*w.top, alignment);
    return start <= w.chunk->end() && bytes <= static_cast<size_t>(w.chunk->end() - start)
               ? start
               : nullptr;
  };
  // First a window where the block extends one of the loader's runs, then any with room (which
  // needs a free slot), then a new chunk.
  int chosen = -1, extend = -1;
  for (int w = 0; w < 3 && chosen < 0; w++) {
    char* start = start_in(windows[w]);
    if (start == nullptr || start == windows[w].chunk->base) continue;
    for (int i = 0; i < runs; i++) {
      if (r.begin(i) + r.bytes(i) == start) {
        chosen = w;
        extend = i;
      }
    }
  }
  if (chosen < 0 && runs == MicroRecord::kRuns) return graduate_locked();
  for (int w = 0; w < 3 && chosen < 0; w++) {
    // A new run in a tail must leave a slot for a new chunk: tails fill leftovers, they must
    // not make loaders graduate (10 000 micro loaders: 7 % did without this rule).
    if (w > 0 && runs + 2 > MicroRecord::kRuns) break;
    if (start_in(windows[w]) != nullptr) chosen = w;
  }
  if (chosen < 0) {
    if (!new_chunk_locked(s)) return Result::kFailed;
    chosen = 0;
    windows[0] = {&s, s.current, &s.top};
  }
  Window& w = windows[chosen];
  char* start = start_in(w);
  if (extend >= 0) {
    r.set(extend, r.begin(extend), r.bytes(extend) + bytes);
  } else {
    r.set(runs, start, bytes);
  }
  version_++;
  *w.top = start + bytes;
  w.chunk->used_bytes += bytes;
  w.space->live += bytes;
  *out = start;
  return Result::kDone;
}

MicroPool::Result MicroPool::graduate() {
  std::lock_guard<std::mutex> guard(lock_);
  return graduate_locked();
}

MicroPool::Result MicroPool::graduate_locked() {
  graduations_++;
  return Result::kGraduate;
}

void MicroPool::release(MicroRecord& r) {
  std::lock_guard<std::mutex> guard(lock_);
  version_++;
  r.for_each_run([&](char* begin, size_t n) {
    ms_space_t sp = space_of(begin);
    Space& s = space(sp);
    Chunk* c = s.manager->chunk_containing(begin);
    MS_ASSERT(c != nullptr && c->owner_is(this) && c->used_bytes >= n,
              "run %p of %zu bytes is not in a shared chunk", (void*)begin, n);
    c->used_bytes -= n;
    s.live -= n;
    return_if_unused_locked(s, c);
  });
  r = MicroRecord{};
}

void MicroPool::trim() {
  std::lock_guard<std::mutex> guard(lock_);
  version_++;
  for (Space& s : spaces_) {
    Chunk* current = s.current;
    Chunk* tail = s.tail;
    if (current != nullptr && current->used_bytes == 0) {
      s.current = nullptr;
      s.top = nullptr;
    }
    if (tail != nullptr && tail->used_bytes == 0) {
      s.tail = nullptr;
      s.tail_top = nullptr;
    }
    if (current != nullptr) return_if_unused_locked(s, current);
    if (tail != nullptr) return_if_unused_locked(s, tail);
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
    bool tail_listed = s.tail == nullptr;
    for (const Chunk* c = s.chunks; c != nullptr; c = c->next) {
      MS_VERIFY(c->state == Chunk::State::kInUse && c->owner_is(this),
                "space %d: shared chunk %p is not in use by the pool", i, (void*)c->base);
      MS_VERIFY(c->level == s.level, "space %d: shared chunk %p has level %d, not %d", i,
                (void*)c->base, c->level, s.level);
      MS_VERIFY(c->used_bytes <= c->bytes && c->used_bytes <= s.manager->mask_committed_bytes(c),
                "space %d: shared chunk %p holds %zu live bytes, more than committed", i,
                (void*)c->base, c->used_bytes);
      MS_VERIFY(c->used_bytes > 0 || c == s.current || c == s.tail,
                "space %d: shared chunk %p is empty and neither current nor tail", i,
                (void*)c->base);
      MS_VERIFY(c->next == nullptr || c->next->prev == c, "space %d: chunk list broken", i);
      if (c == s.current) current_listed = true;
      if (c == s.tail) tail_listed = true;
      live += c->used_bytes;
      n++;
    }
    MS_VERIFY(current_listed && tail_listed, "space %d: current or tail chunk not listed", i);
    MS_VERIFY(s.tail == nullptr || (s.tail_top >= s.tail->base && s.tail_top <= s.tail->end()),
              "space %d: tail top %p outside the tail chunk", i, (void*)s.tail_top);
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
