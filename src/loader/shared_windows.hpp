// Per-thread allocation windows of a shared loader (MS_LOADER_SHARED), like a JVM's TLABs.
// docs/design.md ("Shared loaders' windows") explains the design and the figures behind it.
//
// A shared loader is called by many threads at once (a parallel-capable class loader). Each
// thread bumps in a window of its own per space, carved from the loader's arena of that space as
// one block under the loader's lock; only taking a new window takes the lock. A window is an
// ordinary arena block, so the accounting identity holds as it is: its unused rest counts as used
// until the window retires, when the rest becomes a free block (salvaged).
//
//   loader ─► windows: [T1 non-class: start ─ top ─ end] ─► [T1 class: ...] ─► [T2 ...] ─► null
//   thread T1's cache: key of the loader's life ─► its windows, by space
//
// The path of most blocks: the inline ms_allocate finds the loader's public window closed and
// calls ms_allocate_slow, which checks the handle's cookie and tries the calling thread's window
// (LoaderMetaspace::allocate_in_window, try_bump): no lock, no barrier. What it reads is written
// only at the loader's open (its kind, the key, which ms__bump.spare of the loader's head also
// holds, on the line the cookie check has just read), atomically (the kind byte's graduation
// bit) or by the thread itself (its cache entry, its window, on a line pair of its own).
//
// A new window, under the lock: a free block that can hold the request (best fit, up to
// kMaxWindowBytes of it; one below kMinFreeWindowBytes serves the request alone), else a block
// carved from the arena's chunk, grown in place when it lies right behind the old window. Carved
// windows double per thread from kWindowBytes to kMaxWindowBytes. Klasses get class windows only
// at 8-byte class alignment and once the micro pool does not take them; requests above
// kMaxWindowRequest take the lock.
//
// Invariants: every window is linked in the loader (under its lock), so ms_verify checks it
// (inside memory the loader's arenas handed out, start ≤ top ≤ end, no two unused parts
// [top, end) overlap) and per-loader statistics count its blocks. Only the window's thread moves
// its `top`. A thread that ends orphans its windows (thread_records.hpp); the next thread that
// needs a window of the space adopts one before making a new one, and a thread taking a window
// retires the orphans nobody adopted. So a loader holds at most one window per space for each
// thread that allocated in it at the same time.
//
// Loader death (the contract, also in metaspace.h): ms_loader_destroy must not run concurrently
// with any other call on that loader; the caller orders them. Destruction frees every window with
// the loader's chunks; a thread's cache entry names the key of the loader's life, which died with
// it, so a later call with the dead handle fails as MS_ERR_DESTROYED and a recycled loader object
// never hands out a window of its former life.
#pragma once

#include <metaspace/detail/loader_head.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/assert.hpp"
#include "loader/loader_lock.hpp"
#include "os/thread_records.hpp"

namespace metaspace {

class Arena;
class SlabAllocator;

// A line pair of its own (alignas(128): the adjacent-line prefetcher moves 128-byte pairs), so
// that a thread's bumps never write a line another thread reads (from the slab, two threads'
// windows would share lines, and every bump would invalidate the neighbour's).
struct alignas(128) SharedWindow {
  std::atomic<char*> top{nullptr};  // moved by the window's thread only; read by verify
  std::atomic<uint64_t> blocks{0};  // blocks handed out from the window, if counted
  char* start = nullptr;            // [start, end): written under the loader lock
  char* end = nullptr;
  size_t carve_bytes = 0;           // the size of this thread's next window carved from a chunk
  ThreadIdentity owner;             // the thread bumping in it (thread_records.hpp)
  SharedWindow* next = nullptr;     // the loader's list, under its lock
  ms_space_t space = MS_SPACE_NONCLASS;
};

// A thread's quick way to its windows: a few entries, chosen by the loader's address. Constant
// initialized, so that the inline try_bump reaches it without a TLS wrapper call, and
// initial-exec: the library is compiled position independent (for the shared library), and the
// general-dynamic model would call __tls_get_addr twice per try_bump and give ms_allocate_slow a
// stack frame. 96 bytes of the static TLS surplus that glibc keeps for libraries loaded later.
struct SharedWindowCacheEntry {
  uint64_t key = 0;              // SharedWindows::key() of the life these windows belong to
  SharedWindow* window[2] = {};  // by ms_space_t
};
inline constexpr size_t kSharedWindowCacheEntries = 4;
inline constinit thread_local SharedWindowCacheEntry t_shared_window_cache
    [kSharedWindowCacheEntries] __attribute__((tls_model("initial-exec")));

// 56 bytes from the slab, sharing lines with other objects: only the loader lock's holder
// touches it (the window path reads the key from the loader's head).
class SharedWindows {
 public:
  // A thread's first window in a space; each window it carves from a chunk after that is twice
  // the size of the one before, up to kMaxWindowBytes. A thread that makes a few blocks holds
  // little; a busy one rarely takes the lock, and a locked call is dear: its atomics wait until
  // the stores before them drain, and a runtime's stores into fresh blocks miss the cache. With
  // windows up to 64 KiB, new windows are 0.30 % of the size mix's calls.
  static constexpr size_t kWindowBytes = 8 * 1024;
  // Class space's first: 3 Klasses of the mix's ~600 bytes. A thread that loads a class or two
  // into a shared loader leaves little class space unused.
  static constexpr size_t kFirstClassWindowBytes = 2 * 1024;
  static constexpr size_t kMaxWindowBytes = 64 * 1024;
  // A window's rest when it retires is below the request that did not fit (at most
  // kMaxWindowRequest), and becomes a free block. 2 KiB lets the mix's largest requests (129 and
  // 130 words) through the window: taking the lock, they would carve behind the window, so that
  // the next window could not grow in place.
  static constexpr size_t kMaxWindowRequest = 2 * 1024;
  // A free block below this that fits a request best serves that request alone (split to it),
  // not as a window.
  static constexpr size_t kMinFreeWindowBytes = 512;
  // The most a thread's open windows of one loader hold unused (counted as used): one window per
  // space, grown in place at most by one carve past its rest.
  static constexpr size_t kMaxOpenBytesPerThread = 2 * (kMaxWindowBytes + kMaxWindowRequest);

  // `lock`: the loader's lock, which the `*_locked` functions expect the caller to hold.
  static SharedWindows* create(SlabAllocator& bookkeeping, const LoaderLock& lock);
  static void destroy(SlabAllocator& bookkeeping, SharedWindows* windows);

  // Called when the loader object is (re)opened: a new key, so that no thread's cache entry
  // from an earlier life matches. `count`: count the blocks handed out from windows
  // (LoaderEnvironment::count_allocations); else nothing is counted. Returns the key.
  uint64_t open(bool count);
  // The key of this life: a number no other life of any loader had, shifted left by one, with
  // kCountingBit set while blocks are counted; 0 once released. Never 0 while open.
  uint64_t key() const { return key_.load(std::memory_order_relaxed); }
  static constexpr uint64_t kCountingBit = 1;
  static bool counts(uint64_t key) { return (key & kCountingBit) != 0; }
  // The calling thread's window of `space` in the life `key` (the loader's key()), if it has
  // room for `n` bytes (a multiple of 8, at most kMaxWindowRequest). Lock-free, and reads
  // nothing of the SharedWindows object: the caller has the key from the loader's head. Null:
  // take the lock, refill_locked.
  static void* try_bump(uint64_t key, ms_space_t space, size_t n) {
    SharedWindow* w = cached_window(key, space);
    if (w == nullptr) return nullptr;
    char* top = w->top.load(std::memory_order_relaxed);
    if (n > static_cast<size_t>(w->end - top)) return nullptr;
    // Release: a verifier that reads the new top (under the loader lock) sees a consistent window.
    w->top.store(top + n, std::memory_order_release);
    if (counts(key)) count_block(w);
    return top;
  }
  // Under the loader lock, when try_bump failed: `n` bytes for the calling thread from `arena`
  // (the loader's arena of `space`), and a window with room after them. If a free block could
  // hold the request, the best fit (up to kMaxWindowBytes of it) becomes the window, or serves
  // the request alone if below kMinFreeWindowBytes: free blocks are reused whenever a thread
  // needs a window, and a thread bumps through its window without looking at them. Else the
  // window is carved from the arena's chunk, growing in place if it lies right behind the old
  // one. A retired window's rest becomes a free block. Null with the error set if the arena
  // could not (the window list is unchanged then).
  void* refill_locked(ms_space_t space, Arena& arena, SlabAllocator& bookkeeping, size_t n);
  // Under the loader lock, before the arenas die: forgets every window (their memory goes back
  // with the arenas' chunks) and ends the life (its key).
  void release_locked(SlabAllocator& bookkeeping);

  // Under the loader lock. `klass`: the class arena, or null if the loader has none.
  bool verify_locked(const Arena& nonclass, const Arena* klass) const;
  // Blocks handed out from windows, minus the carving allocation of each (counted by the arena).
  // Only while counting (open(true)).
  uint64_t extra_allocations_locked() const;
  size_t windows_locked() const {
    MS_ASSERT_LOCKED(*lock_);
    return count_;
  }

 private:
  // By the key's life number: lives made one after another (a runtime's loaders) take
  // different entries.
  static SharedWindowCacheEntry& entry_for(uint64_t key) {
    return t_shared_window_cache[((key >> 1) * 0x9E3779B97F4A7C15ull) >> 62];
  }
  // The calling thread's window of `space` through its cache entry, if the entry is of the life
  // `key`; null otherwise (evicted, or none yet). try_bump's lookup, and refill_locked's.
  static SharedWindow* cached_window(uint64_t key, ms_space_t space) {
    const SharedWindowCacheEntry& e = entry_for(key);
    return e.key == key ? e.window[space] : nullptr;
  }
  // One more block handed out from `w`. Only `w`'s thread (or the lock holder acting for it)
  // writes the count.
  static void count_block(SharedWindow* w) {
    w->blocks.store(w->blocks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // `thread`'s window of `space`; else one of `space` whose thread ended, given to `thread`
  // (adopted); null if neither. One walk of the list.
  SharedWindow* find_or_adopt_locked(const ThreadIdentity& thread, ms_space_t space);
  // Retires every window of `space` whose thread ended (its rest filed in `arena` as a salvaged
  // free block, its record freed), if a thread ended since the last look at this space. One
  // whose rest cannot be filed (no room for the free-block structure) stays for a later look.
  void retire_orphans_locked(ms_space_t space, Arena& arena, SlabAllocator& bookkeeping);
  // `w`'s new memory [block, block + bytes), of which the request takes `n` from `result`.
  void install_locked(SharedWindow* w, char* block, size_t bytes, char* result, size_t n);

  // Written at open and release, which the contract orders before and after every other call;
  // read under the lock (the window path reads the loader head's copy).
  std::atomic<uint64_t> key_{0};
  SharedWindow* head_ = nullptr;
  size_t count_ = 0;
  uint64_t carved_ = 0;  // window blocks the arenas counted as allocations
  uint64_t retired_blocks_ = 0;   // blocks handed out from windows retired (if counted)
  uint64_t exits_seen_[2] = {};  // thread_exits() at the last look for orphans, by space
#ifdef METASPACE_ASSERTS
  const LoaderLock* lock_ = nullptr;  // the loader's, for MS_ASSERT_LOCKED
#endif
};

}  // namespace metaspace
