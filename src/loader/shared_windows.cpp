#include "loader/shared_windows.hpp"

#include <algorithm>
#include <vector>

#include "arena/arena.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/verify.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

namespace {

static_assert(kSharedWindowCacheEntries == 4, "entry_for picks an entry with the top 2 bits");
#ifndef METASPACE_ASSERTS
static_assert(sizeof(SharedWindows) == 56, "the size its comment gives");
#endif

// Life numbers are unique across every loader object, so an entry never matches a recycled one.
std::atomic<uint64_t> g_next_life{1};

}  // namespace

SharedWindows* SharedWindows::create(SlabAllocator& bookkeeping,
                                     [[maybe_unused]] const LoaderLock& lock) {
  SharedWindows* w = bookkeeping.create<SharedWindows>();
  MS_DEBUG_ONLY(if (w != nullptr) w->lock_ = &lock;)
  return w;
}

void SharedWindows::destroy(SlabAllocator& bookkeeping, SharedWindows* windows) {
  bookkeeping.destroy(windows);
}

uint64_t SharedWindows::open(bool count) {
  MS_ASSERT(head_ == nullptr && count_ == 0, "windows left from an earlier life");
  carved_ = 0;
  retired_blocks_ = 0;
  exits_seen_[0] = exits_seen_[1] = 0;
  uint64_t key = g_next_life.fetch_add(1, std::memory_order_relaxed) << 1 |
                 (count ? kCountingBit : 0);
  key_.store(key, std::memory_order_relaxed);
  return key;
}

namespace {

// A window of `space` whose thread ended. thread_ended's acquire: the ended thread's last top is
// the one read from here on.
bool orphaned(const SharedWindow& w, ms_space_t space) {
  return w.space == space && thread_ended(w.owner);
}

}  // namespace

SharedWindow* SharedWindows::find_or_adopt_locked(const ThreadIdentity& thread,
                                                  ms_space_t space) {
  MS_ASSERT_LOCKED(*lock_);
  SharedWindow* orphan = nullptr;
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    if (w->space == space && same_thread(w->owner, thread)) return w;
    if (orphan == nullptr && orphaned(*w, space)) orphan = w;
  }
  if (orphan != nullptr) orphan->owner = thread;
  return orphan;
}

void SharedWindows::retire_orphans_locked(ms_space_t space, Arena& arena,
                                          SlabAllocator& bookkeeping) {
  MS_ASSERT_LOCKED(*lock_);
  uint64_t exits = thread_exits();
  if (exits == exits_seen_[space]) return;
  exits_seen_[space] = exits;
  KeepLastError keep;  // a rest that cannot be filed now is not the request's failure
  for (SharedWindow** link = &head_; *link != nullptr;) {
    SharedWindow* w = *link;
    if (!orphaned(*w, space)) {
      link = &w->next;
      continue;
    }
    char* top = w->top.load(std::memory_order_relaxed);
    if (top < w->end) {
      if (!arena.prepare_salvage()) {
        exits_seen_[space] = exits - 1;  // look again at the next window
        link = &w->next;
        continue;
      }
      (void)arena.file_salvaged(top, static_cast<size_t>(w->end - top));
    }
    retired_blocks_ += w->blocks.load(std::memory_order_relaxed);
    *link = w->next;
    count_--;
    bookkeeping.destroy_aligned(w);
  }
}

void SharedWindows::install_locked(SharedWindow* w, char* block, size_t bytes, char* result,
                                   size_t n) {
  MS_ASSERT_LOCKED(*lock_);
  w->end = block + bytes;
  w->top.store(result + n, std::memory_order_release);
  uint64_t key = this->key();
  if (counts(key)) count_block(w);
  SharedWindowCacheEntry& e = entry_for(key);
  if (e.key != key) e = SharedWindowCacheEntry{.key = key};
  e.window[w->space] = w;
}

void* SharedWindows::refill_locked(ms_space_t space, Arena& arena, SlabAllocator& bookkeeping,
                                   size_t n) {
  MS_ASSERT_LOCKED(*lock_);
  MS_ASSERT(n % 8 == 0 && n > 0 && n <= kMaxWindowRequest, "window request of %zu bytes", n);
  // The thread's window: through its cache entry, or (evicted, or a thread reused the entry) the
  // list; or, for a thread that has none in this space yet, one whose thread ended.
  SharedWindow* w = cached_window(key(), space);
  ThreadIdentity thread;
  if (w == nullptr) {
    thread = current_thread_identity();
    w = find_or_adopt_locked(thread, space);
    char* top = w != nullptr ? w->top.load(std::memory_order_relaxed) : nullptr;
    if (w != nullptr && n <= static_cast<size_t>(w->end - top)) {
      // The cache entry had been evicted (another loader's took its place), not the window
      // filled: it goes on. Retiring it here made what the loader does depend on where objects
      // lie (the fault sweep's runs in one process met different numbers of releases).
      install_locked(w, w->start, static_cast<size_t>(w->end - w->start), top, n);
      return top;
    }
  }
  // Windows of threads that ended and that no thread adopted: their rests become free blocks
  // (a pool that shrank leaves no unused windows counted as used), perhaps this thread's next
  // window (best fit, below).
  retire_orphans_locked(space, arena, bookkeeping);
  bool fresh = w == nullptr;
  if (fresh) {
    w = bookkeeping.create_aligned<SharedWindow>();
    if (w == nullptr) return nullptr;
    w->owner = thread;
    w->space = space;
    w->carve_bytes = space == MS_SPACE_CLASS ? kFirstClassWindowBytes : kWindowBytes;
  }
  // The old window's rest may become a free block: the structure for it first, so that a
  // failure leaves everything as it was.
  if (!fresh && w->top.load(std::memory_order_relaxed) < w->end && !arena.prepare_salvage()) {
    return nullptr;
  }
  // A free block that holds the request first (best fit, so reuse is as before): whole, it is
  // the new window. Else a block carved from the arena's chunk.
  size_t bytes = 0;
  char* block = nullptr;
  bool from_free = n <= arena.fit_max();
  if (from_free) {
    block = static_cast<char*>(
        arena.take_free_block(n, kMaxWindowBytes, kMinFreeWindowBytes, &bytes));
  }
  if (block != nullptr && bytes < kMinFreeWindowBytes) {
    // Too small to be worth a window: the request takes its part alone, and the thread's window
    // goes on as it was (its rest is not filed). As a window each freed block of a batch would
    // cost a window change and a filed rest.
    if (fresh) bookkeeping.destroy_aligned(w);
    return block;
  }
  if (block == nullptr) {
    from_free = false;
    bytes = w->carve_bytes;
    block = static_cast<char*>(arena.allocate(bytes));
  }
  if (block == nullptr) {
    if (fresh) bookkeeping.destroy_aligned(w);
    return nullptr;
  }
  carved_++;
  char* result = block;  // where the request goes: the new block, or the grown window's top
  if (fresh) {
    w->next = head_;
    head_ = w;
    count_++;
    w->start = block;
  } else if (block == w->end && arena.owns(w->start, static_cast<size_t>(block + bytes -
                                                                          w->start))) {
    // Carved right behind the old window in the same chunk (no other thread carved in between;
    // a block never spans two chunks, even adjacent ones): the window grows and keeps its rest.
    // Filing rests as free blocks made most later requests fit one (fit_max) and take the
    // lock: 11.5 % of the size mix's blocks with one thread.
    result = w->top.load(std::memory_order_relaxed);
  } else {
    // The old window's rest becomes a free block.
    char* top = w->top.load(std::memory_order_relaxed);
    if (w->end > top) (void)arena.file_salvaged(top, static_cast<size_t>(w->end - top));
    w->start = block;
  }
  if (!from_free) w->carve_bytes = std::min(2 * w->carve_bytes, kMaxWindowBytes);
  install_locked(w, block, bytes, result, n);
  return result;
}

void SharedWindows::release_locked(SlabAllocator& bookkeeping) {
  MS_ASSERT_LOCKED(*lock_);
  key_.store(0, std::memory_order_relaxed);  // no cache entry matches any more
  while (head_ != nullptr) {
    SharedWindow* w = head_;
    head_ = w->next;
    bookkeeping.destroy_aligned(w);
  }
  count_ = 0;
}

uint64_t SharedWindows::extra_allocations_locked() const {
  MS_ASSERT_LOCKED(*lock_);
  uint64_t blocks = 0;
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    blocks += w->blocks.load(std::memory_order_relaxed);
  }
  return blocks + retired_blocks_ - carved_;
}

bool SharedWindows::verify_locked(const Arena& nonclass, const Arena* klass) const {
  MS_ASSERT_LOCKED(*lock_);
  std::vector<std::pair<const char*, const char*>> ranges;
  size_t n = 0;
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    MS_VERIFY(n < count_, "shared loader lists more windows than the %zu it made", count_);
    MS_VERIFY((reinterpret_cast<uintptr_t>(w) & (alignof(SharedWindow) - 1)) == 0,
              "window record %p shares its lines", (void*)w);
    const char* top = w->top.load(std::memory_order_acquire);
    MS_VERIFY(w->start != nullptr && w->start <= top && top <= w->end,
              "window [%p, %p) has its top at %p", (void*)w->start, (void*)w->end, (void*)top);
    // A non-class window may be a free block in class space (a class chunk's tail or alignment
    // gap that the class arena handed to its sibling): memory of the class arena's chunks.
    size_t bytes = static_cast<size_t>(w->end - w->start);
    bool owned = w->space == MS_SPACE_CLASS
                     ? klass != nullptr && klass->owns(w->start, bytes)
                     : nonclass.owns(w->start, bytes) ||
                           (klass != nullptr && klass->owns(w->start, bytes));
    MS_VERIFY(owned, "window [%p, %p) of space %d is not memory the loader's arenas handed out",
              (void*)w->start, (void*)w->end, w->space);
    // Only the unused parts are the windows' own: blocks below a top were handed out, and one
    // freed there may be another thread's window by now.
    if (top < w->end) ranges.emplace_back(top, w->end);
    n++;
  }
  MS_VERIFY(n == count_, "shared loader lists %zu windows, made %zu", n, count_);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); i++) {
    MS_VERIFY(ranges[i - 1].second <= ranges[i].first, "windows [%p, %p) and [%p, %p) overlap",
              (const void*)ranges[i - 1].first, (const void*)ranges[i - 1].second,
              (const void*)ranges[i].first, (const void*)ranges[i].second);
  }
  return true;
}

}  // namespace metaspace
