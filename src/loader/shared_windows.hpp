// Per-thread allocation windows of a shared loader (MS_LOADER_SHARED), like a JVM's TLABs.
//
// A shared loader is called by many threads at once (a parallel-capable class loader), and
// serializing every allocation on the loader's lock cost 53 ns per block with one thread and
// made two threads slower than one (0.44–0.65×). Here each thread bumps in a window of its own,
// carved from the loader's non-class arena as one block under the lock; only taking a new window
// takes the lock. A window is an ordinary arena block, so the accounting identity holds as it
// is: its unused rest counts as used until the window is retired, when the rest becomes a free
// block (salvaged) — the same lag, at most kWindowBytes per thread, as a TLAB's in a heap.
//
//   loader ─► windows: [T1: start ─ top ─ end] ─► [T2: start ─ top ─ end] ─► null
//   thread T1's cache: (loader, generation) ─► its window
//
// Requests a free block could hold (fit_max), class space requests and requests above
// kMaxWindowRequest take the locked path, so reuse stays best fit and classes keep their alignment.
//
// Registration and visibility: every window is linked in the loader (under its lock), so
// ms_verify checks it (inside the arena's handed-out memory, start ≤ top ≤ end, no two overlap)
// and per-loader statistics count its blocks. A thread's own cache entry (a few per thread, by
// loader) is its quick way to its window; when the entry was evicted the thread finds its window
// again in the loader's list, so windows never pile up. Only that thread moves its `top`.
//
// Loader death (the contract, also in metaspace.h): ms_loader_destroy must not run concurrently
// with any other call on that loader, from any thread — the caller orders them (a runtime
// destroys a loader only when no thread can load into it any more, after the threads that did
// have synchronized with the destroying one). Destruction then frees every window with the
// loader's chunks at once; a thread's cache entry names the loader's generation, which died
// with it, so a later call with the dead handle fails as MS_ERR_DESTROYED and a recycled loader
// object never hands out a window of its former life. Windows of threads that exited stay with
// the loader until it dies.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace metaspace {

class Arena;
class SlabAllocator;

struct SharedWindow {
  char* start = nullptr;            // [start, end): written under the loader lock
  char* end = nullptr;
  std::atomic<char*> top{nullptr};  // moved by the window's thread only; read by verify
  std::atomic<uint64_t> blocks{0};  // blocks handed out from the window
  const void* thread = nullptr;     // the owning thread's cache (its address names the thread)
  SharedWindow* next = nullptr;     // the loader's list, under its lock
};

class SharedWindows {
 public:
  // A window's rest when it retires is below the request that did not fit (at most
  // kMaxWindowRequest), so at most 1/8 of a window waits as a free block for reuse.
  static constexpr size_t kWindowBytes = 8 * 1024;
  static constexpr size_t kMaxWindowRequest = 1024;

  // Called when the loader object is (re)opened: a new generation, so that no thread's cache
  // entry from an earlier life matches.
  void open();
  // The calling thread's window for this generation, if it has room for `n` bytes (a multiple
  // of 8, at most kMaxWindowRequest) and no free block could hold them (n > fit_max). Lock-free;
  // null: take the lock and call refill_locked.
  void* try_bump(size_t n, size_t fit_max);
  // Under the loader lock: retires the thread's window (its rest becomes a free block of
  // `arena`), carves a new one from `arena` and hands out `n` bytes of it. Null with the error
  // set if the arena could not (the window list is unchanged then).
  void* refill_locked(Arena& arena, SlabAllocator& bookkeeping, size_t n);
  // Under the loader lock, before the arena dies: forgets every window (their memory goes back
  // with the arena's chunks) and ends the generation.
  void release_locked(SlabAllocator& bookkeeping);

  // Under the loader lock.
  bool verify_locked(const Arena& arena) const;
  // Blocks handed out from windows, minus the carving allocation of each (counted by the arena).
  uint64_t extra_allocations_locked() const;
  size_t windows_locked() const { return count_; }

 private:
  SharedWindow* cached_window() const;
  SharedWindow* find_locked(const void* thread) const;

  SharedWindow* head_ = nullptr;
  size_t count_ = 0;
  uint64_t carved_ = 0;
  // Read by try_bump without the lock; written at open and release, which the contract orders
  // before and after every other call.
  std::atomic<uint64_t> generation_{0};
};

}  // namespace metaspace
