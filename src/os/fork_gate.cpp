#include "os/fork_gate.hpp"

#include <sched.h>

#include "common/verify.hpp"
#include "os/process_barrier.hpp"

namespace metaspace::os {

namespace fork_gate_detail {

std::atomic<uint32_t> g_closed{0};
// Fenced until prepare_fork_gate() found the process barrier: a thread that entered without a
// fence could otherwise be missed by the first fork.
std::atomic<bool> g_entries_fence{true};

void wait_and_enter(ThreadRecord* r, uint32_t count) {
  do {
    r->inside.store(0, std::memory_order_release);
    while (g_closed.load(std::memory_order_acquire) != 0) sched_yield();
    r->inside.store(count, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // rare: no need to spare the fence
  } while (g_closed.load(std::memory_order_acquire) != 0);
}

}  // namespace fork_gate_detail

using fork_gate_detail::g_closed;
using fork_gate_detail::g_entries_fence;

void prepare_fork_gate() {
  if (process_barrier_available()) g_entries_fence.store(false, std::memory_order_relaxed);
}

void close_fork_gate() {
  lock_thread_records();
  g_closed.store(1, std::memory_order_seq_cst);
  // Orders the store above against every entry's store of its count (Dekker, process_barrier.hpp):
  // a thread that entered without seeing the gate closed has its count visible below.
  if (!g_entries_fence.load(std::memory_order_relaxed)) process_barrier();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for_each_thread_record_locked([](ThreadRecord& r) {
    // Not the caller's: a fork from inside a call (the GC callback runs outside: 0 there).
    if (&r == t_thread_record) return;
    while (r.inside.load(std::memory_order_acquire) != 0) sched_yield();
  });
}

void open_fork_gate(ForkSide side) {
  if (side == ForkSide::kChild) end_other_threads_locked();
  g_closed.store(0, std::memory_order_release);
  unlock_thread_records();
}

bool verify_fork_gate() {
  uint32_t closed = g_closed.load(std::memory_order_acquire);
  MS_VERIFY(closed <= 1, "the fork gate reads %u (0 open, 1 closed)", closed);
  MS_VERIFY(g_entries_fence.load(std::memory_order_relaxed) || process_barrier_available(),
            "entries skip their fence but the process has no barrier");
  return true;
}

}  // namespace metaspace::os
