// Which threads have ended: the identity a shared loader's window keeps of its thread; and
// which threads are inside the library (fork_gate.hpp).
//
// A shared loader (shared_windows.hpp) gives each thread a window of its own. A thread that ends
// leaves its window behind; without records, a runtime whose threads come and go (a thread per
// request, a pool that shrinks and grows) would keep one window per thread that ever loaded a
// class, and the loader's list of windows (scanned when a thread's cache misses) would grow with
// them. Each thread
// that calls the library (the fork gate) or takes a window gets a record here; when the thread
// ends (a pthread key's destructor) its record's serial moves on, so every window that names
// (record, old serial) is known to be orphaned, and the next thread that needs a window in that
// loader and space adopts it. The windows a loader holds are then at most one per space for each
// thread that allocated in it at the same time.
//
//   thread ─► t_thread_record ─► ThreadRecord { serial, inside }
//                                       ▲
//                         SharedWindow { owner, owner_serial }
//
// Records are never freed, only reused by later threads (the serial tells the lives apart), so a
// window may read its owner's record at any time, also after the thread ended: their number is
// the most threads that held a record at once. The first 256 are static (16 KiB of .bss); more
// come from pages mapped one at a time and kept. A record fills a cache line: its `inside` count
// is written by its thread on every call into the library, and threads calling at once on
// neighbouring records would otherwise take turns on one line. Without a record (the pthread
// key could not be made, or a page not mapped) a thread's identity never ends: its windows stay
// with the loader until it dies, as before records existed; and a fork does not wait for it.
#pragma once

#include <atomic>
#include <cstdint>

namespace metaspace {

struct alignas(64) ThreadRecord {
  std::atomic<uint64_t> serial{0};  // moves on (release) when the thread holding it ends
  ThreadRecord* next_free = nullptr;
  // Calls of the library the thread is inside (nested through a GC callback); written by the
  // thread only, read by fork (fork_gate.hpp).
  std::atomic<uint32_t> inside{0};
};

// The calling thread's record, or null (none yet, or it could not get one). Initial-exec, so
// reading it calls nothing.
extern constinit thread_local ThreadRecord* t_thread_record
    __attribute__((tls_model("initial-exec")));

// The calling thread's record; takes one on its first call. Null if it cannot have one (no
// pthread key left, or a records page refused).
ThreadRecord* current_thread_record();

// A thread's identity for its windows: its record and the record's serial while it lives. A
// thread without a record has a null record and an address of its own as serial, and never ends.
struct ThreadIdentity {
  ThreadRecord* record = nullptr;
  uint64_t serial = 0;
};

// The calling thread's identity; takes a record on its first call (then the thread's end is
// noticed). Never fails: without a record the identity is {nullptr, an address unique to the
// thread while it lives}.
ThreadIdentity current_thread_identity();

// Whether the thread named by `id` has ended. Acquire: what the thread wrote before it ended
// (its window's top) is visible to the caller after true.
inline bool thread_ended(const ThreadIdentity& id) {
  return id.record != nullptr && id.record->serial.load(std::memory_order_acquire) != id.serial;
}

inline bool same_thread(const ThreadIdentity& a, const ThreadIdentity& b) {
  return a.record == b.record && a.serial == b.serial;
}

// Threads that ended holding a record, so far (acquire: their windows' last tops are visible).
// A loader looks for orphaned windows only when this moved since it last looked.
uint64_t thread_exits();

// For fork (fork_gate.hpp): the records' lock, and every record handed out so far.
void lock_thread_records();
void unlock_thread_records();
// Calls f on every record carved so far, free or held. Caller holds the lock.
void for_each_thread_record_locked(void (*f)(ThreadRecord&));
// In the child of a fork, with the lock held: every record but the caller's is ended and freed,
// as if all those threads (the child does not have them) had ended at the fork; their windows
// are then orphaned.
void end_other_threads_locked();

// Takes the records' lock. Every free record is one carved so far (the static block's used part
// or a mapped page's carved part), listed once, with no call inside the library; the pages are
// page-aligned and the one being carved has its next record within it; the calling thread's
// record, if it has one, is not free. False with MS_ERR_CORRUPTED and the reason otherwise.
bool verify_thread_records();

}  // namespace metaspace
