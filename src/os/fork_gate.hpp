// fork() without exec while other threads are inside the library. The child has only the thread
// that forked; a lock another thread held at that moment would be held there for ever, and the
// child would hang in its first call that takes it. Every exported call of the library runs inside
// the gate (the C API's exception barrier); fork closes it (a pthread_atfork prepare handler,
// api/fork_handlers.hpp): new calls wait at the entrance, and the fork waits until no other thread
// is inside. Then no thread holds a lock of the library or is half way through a locked change when
// the process is copied, and the child can use everything.
//
// Cost on the way in: the thread's record (one initial-exec TLS load), a plain store of its
// `inside` count, a load of the closed flag; on the way out a store. No fence, no shared line
// written: the fork side orders itself with one process-wide barrier (process_barrier.hpp; where
// the kernel has none, entries fence instead). The gate's part of a fork is one look at each
// thread record (the most threads that used the library at once); keeping the inline paths'
// owners out (live_metaspaces.hpp) adds a walk over the live loaders that writes none of their
// objects. Taking every loader's lock across the fork would cost more per loader, and unlocking
// after the fork would write every loader object's page, so that parent and child each copy all
// of them.
//
// What the gate does not cover: a thread without a record (no pthread key left, or a records
// page refused) is not waited for; the inline paths (ms_allocate's bump, ms_deallocate's push,
// a shared loader's window bump) take no lock and are not gated: a bump caught at the fork either
// happened or not, and a non-shared loader's owner must not be inside a call on it (the caller's
// serialization, docs/threads.md).
#pragma once

#include <atomic>
#include <cstdint>

#include "os/thread_records.hpp"

namespace metaspace::os {

namespace fork_gate_detail {
extern std::atomic<uint32_t> g_closed;  // non-zero while a fork is under way
extern std::atomic<bool> g_entries_fence;  // no process barrier: entries order themselves
// Out of line: the gate is closed; waits with the count at 0, then enters again with `count`.
void wait_and_enter(ThreadRecord* r, uint32_t count);

inline void enter_with(ThreadRecord* r, uint32_t count) {
  r->inside.store(count, std::memory_order_relaxed);
  if (g_entries_fence.load(std::memory_order_relaxed)) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  // Acquire: an entry after a fork sees what the fork handlers wrote (a plain load on x86).
  if (g_closed.load(std::memory_order_acquire) != 0) wait_and_enter(r, count);
}
}  // namespace fork_gate_detail

// The calling thread is inside the library while this lives. Nested entries only count.
class InsideLibrary {
 public:
  InsideLibrary() : r_(t_thread_record) {
    if (r_ == nullptr) r_ = current_thread_record();
    if (r_ == nullptr) return;  // not tracked: not waited for (see above)
    uint32_t n = r_->inside.load(std::memory_order_relaxed);
    if (n == 0) {
      fork_gate_detail::enter_with(r_, 1);
    } else {
      r_->inside.store(n + 1, std::memory_order_relaxed);
    }
  }
  ~InsideLibrary() {
    if (r_ != nullptr) {
      r_->inside.store(r_->inside.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    }
  }
  InsideLibrary(const InsideLibrary&) = delete;
  InsideLibrary& operator=(const InsideLibrary&) = delete;

 private:
  ThreadRecord* r_;
};

// Out of the library for a call into the runtime that may block (the GC callback, which runs
// outside every lock): a fork by another thread then need not wait for it. The caller holds no
// lock of the library.
class OutsideLibrary {
 public:
  OutsideLibrary() : r_(t_thread_record) {
    if (r_ == nullptr) return;
    count_ = r_->inside.load(std::memory_order_relaxed);
    r_->inside.store(0, std::memory_order_release);
  }
  ~OutsideLibrary() {
    if (r_ != nullptr && count_ != 0) fork_gate_detail::enter_with(r_, count_);
  }
  OutsideLibrary(const OutsideLibrary&) = delete;
  OutsideLibrary& operator=(const OutsideLibrary&) = delete;

 private:
  ThreadRecord* r_;
  uint32_t count_ = 0;
};

// Once, before a fork can matter (the first ms_create): chooses how entries are ordered.
void prepare_fork_gate();
// The prepare handler: closes the gate and waits until no thread but the caller is inside; holds
// the records' lock until it opens again.
void close_fork_gate();
// After the fork. In the child every other thread's record is ended and freed first.
enum class ForkSide { kParent, kChild };
void open_fork_gate(ForkSide side);

// The gate's state: open or closed (no other value), and entries that skip their fence only
// where the process barrier orders them (a fork would otherwise miss a thread that just
// entered). False with MS_ERR_CORRUPTED and the reason otherwise.
bool verify_fork_gate();

}  // namespace metaspace::os
