#include "loader/shared_windows.hpp"

#include <algorithm>
#include <vector>

#include "arena/arena.hpp"
#include "common/assert.hpp"
#include "common/verify.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

namespace {

// A thread's quick way to its windows: a few entries, chosen by the loader's address.
struct CacheEntry {
  const SharedWindows* loader = nullptr;
  uint64_t generation = 0;
  SharedWindow* window = nullptr;
};
constexpr size_t kCacheEntries = 4;
thread_local CacheEntry t_cache[kCacheEntries];

CacheEntry& entry_for(const SharedWindows* loader) {
  uint64_t a = reinterpret_cast<uintptr_t>(loader) >> 4;
  return t_cache[(a * 0x9E3779B97F4A7C15ull) >> 62];
}

// Generations are unique across every loader object, so an entry never matches a recycled one.
std::atomic<uint64_t> g_next_generation{1};

}  // namespace

void SharedWindows::open() {
  MS_ASSERT(head_ == nullptr && count_ == 0, "windows left from an earlier life");
  carved_ = 0;
  generation_.store(g_next_generation.fetch_add(1, std::memory_order_relaxed),
                    std::memory_order_relaxed);
}

SharedWindow* SharedWindows::cached_window() const {
  const CacheEntry& e = entry_for(this);
  if (e.loader != this || e.generation != generation_.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  return e.window;
}

void* SharedWindows::try_bump(size_t n, size_t fit_max) {
  const CacheEntry& e = entry_for(this);
  if (e.loader != this || e.generation != generation_.load(std::memory_order_relaxed) ||
      n <= fit_max) {
    return nullptr;
  }
  SharedWindow* w = e.window;
  char* top = w->top.load(std::memory_order_relaxed);
  if (n > static_cast<size_t>(w->end - top)) return nullptr;
  // Release: a verifier that reads the new top (under the loader lock) sees a consistent window.
  w->top.store(top + n, std::memory_order_release);
  w->blocks.store(w->blocks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return top;
}

SharedWindow* SharedWindows::find_locked(const void* thread) const {
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    if (w->thread == thread) return w;
  }
  return nullptr;
}

void* SharedWindows::refill_locked(Arena& arena, SlabAllocator& bookkeeping, size_t n) {
  MS_ASSERT(n % 8 == 0 && n > 0 && n <= kMaxWindowRequest, "window request of %zu bytes", n);
  const void* thread = t_cache;
  SharedWindow* w = cached_window();
  if (w == nullptr) w = find_locked(thread);  // the entry was evicted, or a thread reused it
  bool fresh = w == nullptr;
  if (fresh) {
    w = bookkeeping.create<SharedWindow>();
    if (w == nullptr) return nullptr;
    w->thread = thread;
  }
  char* block = static_cast<char*>(arena.allocate(kWindowBytes));
  if (block == nullptr) {
    if (fresh) bookkeeping.destroy(w);
    return nullptr;
  }
  carved_++;
  char* result = block;  // where the request goes: the new block, or the grown window's top
  if (fresh) {
    w->next = head_;
    head_ = w;
    count_++;
    w->start = block;
  } else if (block == w->end && arena.owns(w->start, static_cast<size_t>(block + kWindowBytes -
                                                                          w->start))) {
    // Carved right behind the old window in the same chunk (no other thread carved in between;
    // a block never spans two chunks, even adjacent ones): the window grows and keeps its rest.
    // Filing rests as free blocks made most later requests fit one (fit_max) and take the
    // lock: 11.5 % of the size mix's blocks with one thread.
    result = w->top.load(std::memory_order_relaxed);
  } else {
    // The old window's rest becomes a free block (if the free-block structure cannot be made,
    // the rest stays counted as used until the loader dies).
    char* top = w->top.load(std::memory_order_relaxed);
    if (w->end > top) (void)arena.file_salvaged(top, static_cast<size_t>(w->end - top));
    w->start = block;
  }
  w->end = block + kWindowBytes;
  w->top.store(result + n, std::memory_order_release);
  w->blocks.store(w->blocks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  entry_for(this) = CacheEntry{this, generation_.load(std::memory_order_relaxed), w};
  return result;
}

void SharedWindows::release_locked(SlabAllocator& bookkeeping) {
  generation_.store(0, std::memory_order_relaxed);  // no cache entry matches any more
  while (head_ != nullptr) {
    SharedWindow* w = head_;
    head_ = w->next;
    bookkeeping.destroy(w);
  }
  count_ = 0;
}

uint64_t SharedWindows::extra_allocations_locked() const {
  uint64_t blocks = 0;
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    blocks += w->blocks.load(std::memory_order_relaxed);
  }
  return blocks - carved_;
}

bool SharedWindows::verify_locked(const Arena& arena) const {
  std::vector<std::pair<const char*, const char*>> ranges;
  size_t n = 0;
  for (SharedWindow* w = head_; w != nullptr; w = w->next) {
    MS_VERIFY(n < count_, "shared loader lists more windows than the %zu it made", count_);
    const char* top = w->top.load(std::memory_order_acquire);
    MS_VERIFY(w->start != nullptr && w->start <= top && top <= w->end,
              "window [%p, %p) has its top at %p", (void*)w->start, (void*)w->end, (void*)top);
    MS_VERIFY(arena.owns(w->start, static_cast<size_t>(w->end - w->start)),
              "window [%p, %p) is not memory the loader's arena handed out", (void*)w->start,
              (void*)w->end);
    ranges.emplace_back(w->start, w->end);
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
