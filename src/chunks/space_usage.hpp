// What the arenas of one space have handed out, as counters that anyone may read at any time
// without a lock: ms_get_usage in O(1), and the totals of ms_get_stats without visiting loaders.
//
// The arenas keep them on their slow paths only (the inline bump path stays free of atomics):
// each arena remembers what it last added and adds the difference ("folds" its state in) at the
// end of a slow-path call in which a chunk changed hands or 64 KiB moved (Arena::fold_if_due).
// So the counters lag, per loader, by what it bumped inline since (at most the committed rest of
// its current chunk, which until then counts as free in chunks) and by less than 64 KiB of frees
// and reuses. A statistics snapshot folds every loader it visits, so a quiet metaspace's
// counters are exact after one.
//
// Memory is counted where it lies: a non-class free block in a class alignment gap is class
// space memory. Every counter is a sum of non-negative contributions, each applied as one atomic
// store of the writer that holds the counters (begin_update), in an order that never makes one
// of them pass below zero (see Arena::fold_usage).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace metaspace {

struct SpaceUsage {
  static constexpr int kOrigins = 3;  // arena/free_blocks.hpp: BlockOrigin

  // Handed out and not freed: bumped off chunks, minus free blocks and fences lying here.
  std::atomic<size_t> used_bytes{0};
  // Blocks awaiting reuse that lie in this space, by origin (BlockOrigin).
  std::atomic<size_t> free_block_bytes[kOrigins] = {};
  // Free blocks held by the arenas of this space, wherever they lie (the report's count).
  std::atomic<size_t> free_block_count{0};
  // Checked mode: fences lying in this space.
  std::atomic<size_t> fence_bytes{0};
  // Bookkeeping kept inside chunks in use (a loader's arenas at the start of its first
  // non-class chunk, loader/loader_arenas.hpp): committed chunk memory that is overhead, not
  // used and not free in chunks.
  std::atomic<size_t> overhead_in_chunks_bytes{0};

  // A reader that needs several counters consistent with each other (the accounting identity of
  // a snapshot) reads them between two looks at `version`: even and unchanged means no update was
  // in flight or completed in between (a seqlock). Writers: begin, adds, end. They take turns on
  // `writers` (one exchange; a fold holds it for a few dozen instructions), so the adds and the
  // version are plain loads and stores: one locked instruction per fold instead of one per
  // counter, on a fold every loader runs each 64 KiB it frees or reuses.
  std::atomic<uint64_t> writers{0};
  std::atomic<uint64_t> version{0};

  void begin_update() {
    for (int spins = 0; writers.exchange(1, std::memory_order_acquire) != 0;) {
      while (writers.load(std::memory_order_relaxed) != 0) {
        if (++spins > 64) std::this_thread::yield();  // its holder was preempted
      }
    }
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void end_update() {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    writers.store(0, std::memory_order_release);
  }
  // Version to compare after the read, or false if an update is in flight.
  bool read_begin(uint64_t* v) const {
    *v = version.load(std::memory_order_acquire);
    return (*v & 1) == 0;
  }
  bool read_end(uint64_t v) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return version.load(std::memory_order_relaxed) == v;
  }

  // Between begin_update and end_update only. The release store orders the odd version before
  // the new value: a reader that loads it (then its acquire fence in read_end) sees the update
  // in flight. (A plain store on x86, as a relaxed one.)
  void add(std::atomic<size_t>& counter, size_t before, size_t after) {
    if (after != before) {
      counter.store(counter.load(std::memory_order_relaxed) + (after - before),
                    std::memory_order_release);
    }
  }
  // Between begin_update and end_update only: counter += n, counter -= n (the writer holds the
  // turn, so no locked add is needed).
  void increase(std::atomic<size_t>& counter, size_t n) { add(counter, 0, n); }
  void decrease(std::atomic<size_t>& counter, size_t n) { add(counter, n, 0); }
  size_t free_bytes() const {
    size_t n = 0;
    for (const auto& f : free_block_bytes) n += f.load(std::memory_order_relaxed);
    return n;
  }
};

}  // namespace metaspace
