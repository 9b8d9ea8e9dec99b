// Per-thread allocation windows of a shared loader (MS_LOADER_SHARED), like a JVM's TLABs.
//
// A shared loader is called by many threads at once (a parallel-capable class loader), and
// serializing every allocation on the loader's lock cost 53 ns per block with one thread and
// made two threads slower than one (0.44–0.65×). Here each thread bumps in a window of its own
// per space, carved from the loader's arena of that space as one block under the lock; only
// taking a new window takes the lock. A window is an ordinary arena block, so the accounting
// identity holds as it is: its unused rest counts as used until the window is retired, when the
// rest becomes a free block (salvaged) — the same lag as a TLAB's in a heap.
//
//   loader ─► windows: [T1 non-class: start ─ top ─ end] ─► [T1 class: ...] ─► [T2 ...] ─► null
//   thread T1's cache: key of the loader's life ─► its windows, by space
//
// The path of most blocks: the inline ms_allocate finds the loader's public window closed and
// calls ms_allocate_slow, which checks the handle's cookie and tries the calling thread's window
// (LoaderMetaspace::allocate_in_window, try_bump) before anything else; no lock, no barrier.
// What it reads on the way is written only at the loader's open (its kind, the key), atomically
// (the kind byte's graduation bit, set later under the lock) or by the thread itself (its cache
// entry, its window): every window record sits on a 128-byte line pair of its own. (From the
// slab, the 48-byte records of two threads shared lines, and every bump invalidated the other
// thread's.) The key of the loader's life (a number no other life of any loader had, and
// whether blocks are counted) is kept in the loader's public head too (ms__bump.spare, unused by
// the inline paths), on the line the cookie check has just read: the path's chain of dependent
// loads is then the thread's cache entry and its window. Through the loader's arenas to this
// object's key it was three loads and 12 instructions longer (callgrind, shared alloc/16: 64 ->
// 52 instructions per call). (The base design deferred to fit_max, so that 2 % of the size
// mix's blocks took the lock for that alone, 2.6 % for Klasses.)
//
// A new window, under the lock: if a free block can hold the request that did not fit (best fit,
// so a freed block is reused before new memory), that whole block is the window (up to
// kMaxWindowBytes of it; one below kMinFreeWindowBytes serves the request alone and the old
// window goes on); else a block is carved from the arena's chunk, and if it lies right
// behind the old window the window grows in place. Carved windows double per thread from
// kWindowBytes to kMaxWindowBytes. Between new windows a thread does not look at the free blocks.
// Klasses get class windows only at 8-byte class alignment and once the micro pool does not take
// them; requests above kMaxWindowRequest take the lock. The measured share of the size mix's
// blocks that take the lock went from 6.5 % to 0.33 % (one thread or two alike).
//
// Registration and visibility: every window is linked in the loader (under its lock), so
// ms_verify checks it (inside memory the loader's arenas handed out, start ≤ top ≤ end, the
// unused parts [top, end) of no two overlap) and per-loader statistics count its blocks. A
// thread's own cache entry (a few per thread, by loader) is its quick way to its windows; when
// the entry was evicted the thread finds its windows again in the loader's list. Only that thread
// moves its `top`. When the thread ends its windows are orphaned (thread_records.hpp): the next
// thread that needs a window of the space adopts one, rest and all, before any new window is
// made, and the orphans no thread adopts are retired when a thread next takes a window of that
// space. A loader holds at most one window per space for each thread that allocated in it at
// the same time, however many threads came and went.
//
// Loader death (the contract, also in metaspace.h): ms_loader_destroy must not run concurrently
// with any other call on that loader, from any thread — the caller orders them (a runtime
// destroys a loader only when no thread can load into it any more, after the threads that did
// have synchronized with the destroying one). Destruction then frees every window with the
// loader's chunks at once; a thread's cache entry names the key of the loader's life, which died
// with it, so a later call with the dead handle fails as MS_ERR_DESTROYED and a recycled loader
// object never hands out a window of its former life.
#pragma once

#include <metaspace/metaspace.h>

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
// that a thread's bumps never write a line another thread reads. From the slab, the 48-byte
// windows of two threads shared lines, and every bump invalidated the neighbour's.
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
// general-dynamic model called __tls_get_addr twice per try_bump and gave ms_allocate_slow a
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
  // the stores before them drain, and a runtime's stores into fresh blocks miss the cache (a
  // profile of the size mix, one thread: 72 % of the locked path's own time on the lock's
  // cmpxchg). New windows were 1.6 % of the mix's calls with 8 KiB windows, 0.78 % up to 32 KiB,
  // 0.30 % up to 64 KiB (with kMaxWindowRequest 2 KiB).
  static constexpr size_t kWindowBytes = 8 * 1024;
  // Class space's first: 3 Klasses of the mix's ~600 bytes. A thread that loads a class or two
  // into a shared loader leaves little class space unused.
  static constexpr size_t kFirstClassWindowBytes = 2 * 1024;
  static constexpr size_t kMaxWindowBytes = 64 * 1024;
  // A window's rest when it retires is below the request that did not fit (at most
  // kMaxWindowRequest), and becomes a free block. At 1 KiB, the mix's largest requests (129 and
  // 130 words, 0.19 % of calls) took the lock and carved behind the window, so that the next
  // window could not grow in place.
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
