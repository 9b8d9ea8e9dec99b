// Which threads have ended: the identity a shared loader's window keeps of its thread.
//
// A shared loader (shared_windows.hpp) gives each thread a window of its own. A thread that ends
// leaves its window behind, and a runtime whose threads come and go (a thread per request, a
// pool that shrinks and grows) used to leave one window per thread that ever loaded a class:
// 3 200 short-lived threads, 10 blocks of 64 bytes each, held 21.6 MB for 2.0 MB of blocks, and
// the loader's list of windows (scanned when a thread's cache misses) grew with them. Each thread
// that takes a window gets a record here; when the thread ends (a pthread key's destructor) its
// record's serial moves on, so every window that names (record, old serial) is known to be
// orphaned, and the next thread that needs a window in that loader and space adopts it. The
// windows a loader holds are then at most one per space for each thread that allocated in it
// at the same time.
//
//   thread ─► t_record ─► ThreadRecord { serial } ◄── SharedWindow { owner, owner_serial }
//
// Records are never freed, only reused by later threads (the serial tells the lives apart), so a
// window may read its owner's record at any time, also after the thread ended: their number is
// the most threads that held a record at once. The first 256 are static (4 KiB of .bss); more
// come from pages mapped one at a time and kept. Without a record (the pthread key could not be
// made, or a page not mapped) a thread's identity never ends: its windows stay with the loader
// until it dies, as before records existed.
#pragma once

#include <atomic>
#include <cstdint>

namespace metaspace {

struct alignas(16) ThreadRecord {
  std::atomic<uint64_t> serial{0};  // moves on (release) when the thread holding it ends
  ThreadRecord* next_free = nullptr;
};

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

// fork() without exec (live_metaspaces.hpp): the records' lock is held across it. In the child
// only the thread that forked lives on: every other record is ended (its windows are then
// orphaned) and freed, as if all those threads had ended at the fork.
enum class ForkSide { kParent, kChild };
void thread_records_lock_for_fork();
void thread_records_unlock_after_fork(ForkSide side);

}  // namespace metaspace
