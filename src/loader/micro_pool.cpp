#include "loader/micro_pool.hpp"

#include <new>

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
  // Chunk::first_hole holds a hole's offset in 16 bits (plus one): up to 512 KiB chunks it
  // counts words, for a 1 MiB granule 16-byte units (holes start at a multiple).
  size_t largest = spaces_[0].manager->geometry().bytes(spaces_[0].level);
  size_t k = spaces_[1].manager->geometry().bytes(spaces_[1].level);
  if (k > largest) largest = k;
  while (largest / hole_unit_ > 0xFFFF) hole_unit_ *= 2;
}

MicroPool::~MicroPool() {
  trim();
  for ([[maybe_unused]] const Space& s : spaces_) {
    MS_ASSERT(s.chunks == nullptr && s.hole_count == 0 && s.hole_chunk == nullptr,
              "micro pool destroyed while loaders hold %zu bytes", s.live);
  }
}

bool MicroPool::new_chunk_locked(Space& s) {
  MS_ASSERT_LOCKED(lock_);
  size_t bytes = s.manager->geometry().bytes(s.level);
  Chunk* c = s.manager->get_chunk(s.level, s.level, bytes);
  if (c == nullptr) return false;
  c->set_owner(this);
  c->used_bytes = 0;  // a shared chunk's used_bytes: what live loaders hold in it
  c->first_hole = 0;
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

bool MicroPool::return_if_unused_locked(Space& s, Chunk* c) {
  MS_ASSERT_LOCKED(lock_);
  if (c->used_bytes != 0 || c == s.current || c == s.tail) return false;
  unlink_and_return_locked(s, c);
  return true;
}

void MicroPool::unlink_and_return_locked(Space& s, Chunk* c) {
  MS_ASSERT_LOCKED(lock_);
  MS_ASSERT(c != s.current && c != s.tail && c->used_bytes == 0,
            "returning shared chunk %p still in use", (void*)c->base);
  // Its holes leave the bins, and the hole window goes if it lies here.
  while (Hole* h = first_hole(c)) unlink_hole_locked(s, c, h);
  if (s.hole_chunk == c) {
    s.hole_chunk = nullptr;
    s.hole_top = s.hole_end = nullptr;
  }
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
  std::lock_guard<Mutex> guard(lock_);
  Space& s = space(sp);
  size_t alignment = s.alignment;
  // Where the block may go: the current chunk, the hole window, this space's tail, and for
  // non-class blocks the class tail (8-byte aligned there too).
  enum { kCurrent, kHoles, kTail, kClassTail, kWindows };
  Window windows[kWindows] = {};
  auto set_windows = [&]() {
    windows[kCurrent] = {&s, s.current, &s.top, s.current != nullptr ? s.current->end() : nullptr};
    windows[kHoles] = {&s, s.hole_chunk, &s.hole_top, s.hole_end};
    windows[kTail] = {&s, s.tail, &s.tail_top, s.tail != nullptr ? s.tail->end() : nullptr};
    if (sp == MS_SPACE_NONCLASS) {
      Space& k = space(MS_SPACE_CLASS);
      windows[kClassTail] = {&k, k.tail, &k.tail_top, k.tail != nullptr ? k.tail->end() : nullptr};
    }
  };
  set_windows();
  auto start_in = [&](const Window& w) -> char* {
    if (w.chunk == nullptr) return nullptr;
    char* start = align_up(*w.top, alignment);
    return start <= w.end && bytes <= static_cast<size_t>(w.end - start) ? start : nullptr;
  };
  // First a window where the block extends one of the loader's runs, then a new run: in the
  // hole window, in a hole taken from the bins, in the current chunk, in a tail; then a new
  // chunk.
  int chosen = -1, extend = -1;
  for (int w = 0; w < kWindows && chosen < 0; w++) {
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
  // A new run in a tail must leave a slot for a new chunk: tails fill leftovers, they must not
  // make loaders graduate (without this rule 7 % of 10 000 micro loaders do). A new run in a
  // hole must leave two: a loader whose blocks outgrow its hole goes on in the current chunk,
  // and may still cross into a new one (with one slot left, loaders hop from hole to hole and
  // graduate: MicroPoolTest.WavesOfLoadersReuseTheHolesOfTheDead).
  bool leftovers = runs + 2 <= MicroRecord::kRuns;
  if (chosen < 0 && runs + 3 <= MicroRecord::kRuns) {
    if (start_in(windows[kHoles]) == nullptr &&
        open_hole_window_locked(s, bytes, alignment)) {
      set_windows();
    }
    if (start_in(windows[kHoles]) != nullptr) chosen = kHoles;
  }
  if (chosen < 0 && start_in(windows[kCurrent]) != nullptr) chosen = kCurrent;
  for (int w = kTail; w < kWindows && chosen < 0 && leftovers; w++) {
    if (start_in(windows[w]) != nullptr) chosen = w;
  }
  if (chosen < 0) {
    if (!new_chunk_locked(s)) return Result::kFailed;
    set_windows();
    chosen = kCurrent;
  }
  Window& w = windows[chosen];
  char* start = start_in(w);
  MS_ASSERT(start != nullptr, "no room in the chosen window");
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
  std::lock_guard<Mutex> guard(lock_);
  return graduate_locked();
}

MicroPool::Result MicroPool::graduate_locked() {
  MS_ASSERT_LOCKED(lock_);
  graduations_++;
  return Result::kGraduate;
}

void MicroPool::release(MicroRecord& r) {
  std::lock_guard<Mutex> guard(lock_);
  version_++;
  r.for_each_run([&](char* begin, size_t n) {
    ms_space_t sp = space_of(begin);
    Space& s = space(sp);
    Chunk* c = s.manager->chunk_containing(begin);
    MS_ASSERT(c != nullptr && c->owner_is(this) && c->used_bytes >= n,
              "run %p of %zu bytes is not in a shared chunk", (void*)begin, n);
    c->used_bytes -= n;
    s.live -= n;
    if (!return_if_unused_locked(s, c)) add_hole_locked(s, c, begin, begin + n);
  });
  r = MicroRecord{};
}

void MicroPool::trim() {
  std::lock_guard<Mutex> guard(lock_);
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

// ---- holes ----

int MicroPool::bin_of(size_t bytes) {
  MS_ASSERT(bytes >= 32, "hole of %zu bytes", bytes);
  int lg = 63 - __builtin_clzll(bytes);
  int bin = (lg - 5) * 4 + static_cast<int>((bytes >> (lg - 2)) & 3);
  return bin < kBins ? bin : kBins - 1;
}

size_t MicroPool::bin_floor(int bin) {
  return (4 + static_cast<size_t>(bin % 4)) << (bin / 4 + 3);
}

MicroPool::Hole* MicroPool::first_hole(const Chunk* c) const {
  return c->first_hole == 0
             ? nullptr
             : reinterpret_cast<Hole*>(c->base + size_t{c->first_hole - 1u} * hole_unit_);
}

void MicroPool::set_first_hole(Chunk* c, Hole* h) const {
  if (h == nullptr) {
    c->first_hole = 0;
    return;
  }
  size_t offset = static_cast<size_t>(h->begin() - c->base);
  MS_ASSERT(offset % hole_unit_ == 0 && offset / hole_unit_ < 0xFFFF,
            "hole %p at offset %zu of its chunk", (void*)h, offset);
  c->first_hole = static_cast<uint16_t>(offset / hole_unit_ + 1);
}

void MicroPool::link_hole_locked(Space& s, Chunk* c, char* begin, char* end) {
  MS_ASSERT_LOCKED(lock_);
  begin = align_up(begin, hole_unit_);
  if (begin >= end || static_cast<size_t>(end - begin) < kMinHoleBytes) return;
  MS_ASSERT(begin >= c->base && end <= c->end(), "hole %p..%p outside its chunk", (void*)begin,
            (void*)end);
  Hole* h = new (begin) Hole{};
  h->bytes = static_cast<size_t>(end - begin);
  int bin = bin_of(h->bytes);
  h->bin_next = s.bins[bin];
  if (h->bin_next != nullptr) h->bin_next->bin_prev = h;
  s.bins[bin] = h;
  s.bin_map |= uint64_t{1} << bin;
  h->chunk_next = first_hole(c);
  if (h->chunk_next != nullptr) h->chunk_next->chunk_prev = h;
  set_first_hole(c, h);
  s.hole_count++;
  s.hole_bytes += h->bytes;
}

void MicroPool::unlink_hole_locked(Space& s, Chunk* c, Hole* h) {
  MS_ASSERT_LOCKED(lock_);
  int bin = bin_of(h->bytes);
  if (h->bin_prev != nullptr) h->bin_prev->bin_next = h->bin_next; else s.bins[bin] = h->bin_next;
  if (h->bin_next != nullptr) h->bin_next->bin_prev = h->bin_prev;
  if (s.bins[bin] == nullptr) s.bin_map &= ~(uint64_t{1} << bin);
  if (h->chunk_prev != nullptr) h->chunk_prev->chunk_next = h->chunk_next;
  else set_first_hole(c, h->chunk_next);
  if (h->chunk_next != nullptr) h->chunk_next->chunk_prev = h->chunk_prev;
  s.hole_count--;
  s.hole_bytes -= h->bytes;
}

MicroPool::Hole* MicroPool::hole_ending_at(const Chunk* c, const char* p) const {
  for (Hole* h = first_hole(c); h != nullptr; h = h->chunk_next) {
    if (h->end() == p) return h;
  }
  return nullptr;
}

MicroPool::Hole* MicroPool::hole_at(const Chunk* c, const char* p) const {
  for (Hole* h = first_hole(c); h != nullptr; h = h->chunk_next) {
    if (h->begin() == p) return h;
  }
  return nullptr;
}

void MicroPool::add_hole_locked(Space& s, Chunk* c, char* begin, char* end) {
  MS_ASSERT_LOCKED(lock_);
  if (!options_.reuse_dead_runs) return;
  // Bytes that end at a window's top go back to the window, with a hole ending where they begin.
  char** tops[3] = {c == s.current ? &s.top : nullptr, c == s.tail ? &s.tail_top : nullptr,
                    c == s.hole_chunk ? &s.hole_top : nullptr};
  for (char** top : tops) {
    if (top == nullptr || *top != end) continue;
    *top = begin;
    if (Hole* h = hole_ending_at(c, begin)) {
      unlink_hole_locked(s, c, h);
      *top = h->begin();
    }
    // The hole window may end there too (below a chunk's top): the top takes it.
    if (top != &s.hole_top && c == s.hole_chunk && s.hole_end == *top) {
      *top = s.hole_top;
      s.hole_chunk = nullptr;
      s.hole_top = s.hole_end = nullptr;
    }
    return;
  }
  // Bytes that begin at the hole window's end extend it, with a hole beginning where they end.
  if (c == s.hole_chunk && begin == s.hole_end) {
    s.hole_end = end;
    if (Hole* h = hole_at(c, end)) {
      unlink_hole_locked(s, c, h);
      s.hole_end = h->end();
    }
    return;
  }
  if (Hole* h = hole_ending_at(c, begin)) {
    unlink_hole_locked(s, c, h);
    begin = h->begin();
  }
  if (Hole* h = hole_at(c, end)) {
    unlink_hole_locked(s, c, h);
    end = h->end();
  }
  link_hole_locked(s, c, begin, end);
}

bool MicroPool::open_hole_window_locked(Space& s, size_t bytes, size_t alignment) {
  MS_ASSERT_LOCKED(lock_);
  if (s.bin_map == 0) return false;
  // The largest hole: the most room for the loader's next blocks (they extend its run there).
  // The top bin may hold holes too small for the block (at its alignment); a few are looked at.
  int bin = 63 - __builtin_clzll(s.bin_map);
  Hole* h = s.bins[bin];
  auto fits = [&](Hole* x) {
    char* start = align_up(x->begin(), alignment);
    return start <= x->end() && bytes <= static_cast<size_t>(x->end() - start);
  };
  for (int looked = 0; h != nullptr && !fits(h); looked++) {
    h = looked < 8 ? h->bin_next : nullptr;
  }
  if (h == nullptr) return false;
  Chunk* c = s.manager->chunk_containing(h);
  MS_ASSERT(c != nullptr && c->owner_is(this), "hole %p outside the pool's chunks", (void*)h);
  char* begin = h->begin();
  char* end = h->end();
  unlink_hole_locked(s, c, h);
  close_hole_window_locked(s);
  s.hole_chunk = c;
  s.hole_top = begin;
  s.hole_end = end;
  return true;
}

void MicroPool::close_hole_window_locked(Space& s) {
  MS_ASSERT_LOCKED(lock_);
  Chunk* c = s.hole_chunk;
  if (c == nullptr) return;
  char* begin = s.hole_top;
  char* end = s.hole_end;
  s.hole_chunk = nullptr;
  s.hole_top = s.hole_end = nullptr;
  add_hole_locked(s, c, begin, end);
}

size_t MicroPool::holes(ms_space_t sp) const {
  std::lock_guard<Mutex> guard(lock_);
  return spaces_[sp].hole_count;
}

size_t MicroPool::hole_bytes(ms_space_t sp) const {
  std::lock_guard<Mutex> guard(lock_);
  return spaces_[sp].hole_bytes;
}

bool MicroPool::clear_of_holes(const void* p, size_t n) const {
  std::lock_guard<Mutex> guard(lock_);
  const char* b = static_cast<const char*>(p);
  const char* e = b + n;
  const Space& s = spaces_[space_of(p)];
  const Chunk* c = s.manager->chunk_containing(p);
  if (c == nullptr || !c->owner_is(this)) return false;
  auto overlaps = [&](const char* lo, const char* hi) { return b < hi && lo < e; };
  for (Hole* h = first_hole(c); h != nullptr; h = h->chunk_next) {
    if (overlaps(h->begin(), h->end())) return false;
  }
  return !(c == s.hole_chunk && overlaps(s.hole_top, s.hole_end)) &&
         !(c == s.current && e > s.top) && !(c == s.tail && e > s.tail_top);
}

bool MicroPool::verify_holes_locked(int i, const Space& s) const {
  MS_ASSERT_LOCKED(lock_);
  size_t n = 0, bytes = 0;
  for (int bin = 0; bin < kBins; bin++) {
    MS_VERIFY(((s.bin_map >> bin) & 1) == (s.bins[bin] != nullptr ? 1u : 0u),
              "space %d: bin %d is %s but marked otherwise", i, bin,
              s.bins[bin] != nullptr ? "used" : "empty");
    for (const Hole* h = s.bins[bin]; h != nullptr; h = h->bin_next) {
      MS_VERIFY(h->bytes >= kMinHoleBytes && bin_of(h->bytes) == bin,
                "space %d: hole %p of %zu bytes in bin %d", i, (const void*)h, h->bytes, bin);
      MS_VERIFY(h->bin_next == nullptr || h->bin_next->bin_prev == h,
                "space %d: bin %d broken at hole %p", i, bin, (const void*)h);
      const Chunk* c = s.manager->chunk_containing(h);
      MS_VERIFY(c != nullptr && c->owner_is(this) && c->state == Chunk::State::kInUse &&
                    reinterpret_cast<const char*>(h) + h->bytes <= c->end(),
                "space %d: hole %p of %zu bytes is not inside a shared chunk", i, (const void*)h,
                h->bytes);
      MS_VERIFY(++n <= s.hole_count, "space %d: more holes in the bins than counted", i);
    }
  }
  MS_VERIFY(n == s.hole_count, "space %d: %zu holes in the bins, %zu counted", i, n,
            s.hole_count);
  n = 0;
  for (const Chunk* c = s.chunks; c != nullptr; c = c->next) {
    // Sorted by address (on the stack: verify takes no memory), neighbours must not overlap.
    constexpr size_t kSorted = 128;
    const char* begins[kSorted];
    const char* ends[kSorted];
    size_t k = 0, in_chunk = 0;
    for (Hole* h = first_hole(c); h != nullptr; h = h->chunk_next) {
      MS_VERIFY(h->begin() >= c->base && h->end() <= c->end() &&
                    (h->begin() - c->base) % static_cast<long>(hole_unit_) == 0,
                "space %d: hole %p listed by chunk %p lies outside it", i, (void*)h,
                (void*)c->base);
      MS_VERIFY(h->chunk_next == nullptr || h->chunk_next->chunk_prev == h,
                "space %d: hole list of chunk %p broken", i, (void*)c->base);
      MS_VERIFY(!(c == s.current && h->end() > s.top) && !(c == s.tail && h->end() > s.tail_top) &&
                    !(c == s.hole_chunk && h->begin() < s.hole_end && s.hole_top < h->end()),
                "space %d: hole %p overlaps a window", i, (void*)h);
      MS_VERIFY(++n <= s.hole_count, "space %d: more holes in chunks than counted", i);
      in_chunk += h->bytes;
      bytes += h->bytes;
      if (k < kSorted) {
        size_t j = k++;
        for (; j > 0 && begins[j - 1] > h->begin(); j--) {
          begins[j] = begins[j - 1];
          ends[j] = ends[j - 1];
        }
        begins[j] = h->begin();
        ends[j] = h->end();
      }
    }
    for (size_t j = 1; j < k; j++) {
      MS_VERIFY(ends[j - 1] <= begins[j], "space %d: holes %p and %p overlap", i,
                (const void*)begins[j - 1], (const void*)begins[j]);
    }
    MS_VERIFY(in_chunk + c->used_bytes <= c->bytes,
              "space %d: chunk %p: %zu bytes in holes and %zu live, more than the chunk", i,
              (void*)c->base, in_chunk, size_t{c->used_bytes});
  }
  MS_VERIFY(n == s.hole_count && bytes == s.hole_bytes,
            "space %d: %zu holes of %zu bytes listed by chunks, %zu of %zu counted", i, n, bytes,
            s.hole_count, s.hole_bytes);
  if (s.hole_chunk != nullptr) {
    bool listed = false;
    for (const Chunk* c = s.chunks; c != nullptr && !listed; c = c->next) listed = c == s.hole_chunk;
    MS_VERIFY(listed && s.hole_top >= s.hole_chunk->base && s.hole_top <= s.hole_end &&
                  s.hole_end <= s.hole_chunk->end(),
              "space %d: hole window %p..%p not in a shared chunk", i, (void*)s.hole_top,
              (void*)s.hole_end);
  }
  return true;
}

size_t MicroPool::live_bytes(ms_space_t sp) const {
  std::lock_guard<Mutex> guard(lock_);
  return spaces_[sp].live;
}

size_t MicroPool::chunks(ms_space_t sp) const {
  std::lock_guard<Mutex> guard(lock_);
  return spaces_[sp].chunk_count;
}

size_t MicroPool::free_in_chunks_bytes(ms_space_t sp) const {
  std::lock_guard<Mutex> guard(lock_);
  const Space& s = spaces_[sp];
  std::lock_guard<std::mutex> manager_lock(s.manager->lock());
  size_t committed = 0;
  for (const Chunk* c = s.chunks; c != nullptr; c = c->next) {
    committed += s.manager->mask_committed_bytes(c);
  }
  return committed - s.live;
}

bool MicroPool::verify() const {
  std::lock_guard<Mutex> guard(lock_);
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
                (void*)c->base, size_t{c->used_bytes});
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
    if (!verify_holes_locked(i, s)) return false;
  }
  return true;
}

}  // namespace metaspace
