// Who holds a lock, for MS_ASSERT_LOCKED (common/assert.hpp): in assert builds the holder's
// current_thread_number(), 0 while the lock is free; in release builds nothing at all (an empty
// member that [[no_unique_address]] keeps out of the lock's size: no store, no load, no byte).
// The library's lock types keep one each (Mutex, common/mutex.hpp; LoaderLock,
// loader/loader_lock.hpp): acquired() right after the lock is taken, released() right before it
// is let go, so only the holder can find its own number there.
//
// The number is the one the thread that forks keeps in the child: a lock taken before a fork and
// released in the child (the thread records' lock, os/fork_gate.hpp) is held by that thread on
// both sides, where a kernel thread id would change.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/assert.hpp"

namespace metaspace {

class LockOwner {
 public:
#ifdef METASPACE_ASSERTS
  void acquired() { owner_.store(current_thread_number(), std::memory_order_relaxed); }
  void released() { owner_.store(0, std::memory_order_relaxed); }
  bool is_current_thread() const {
    return owner_.load(std::memory_order_relaxed) == current_thread_number();
  }

 private:
  std::atomic<uint32_t> owner_{0};
#else
  void acquired() {}
  void released() {}
#endif
};

#ifdef METASPACE_ASSERTS
// Whether the calling thread holds `lock`, for every lock type that shows its LockOwner.
template <typename Lock>
  requires requires(const Lock& l) { l.owner().is_current_thread(); }
bool held_by_current_thread(const Lock& lock) {
  return lock.owner().is_current_thread();
}
#endif

}  // namespace metaspace
