// A std::mutex that knows its holder in assert builds (MS_ASSERT_LOCKED, common/assert.hpp).
// Release builds: the std::mutex alone. Meets Lockable, so std::lock_guard<Mutex> and
// std::unique_lock<Mutex> work with it.
//
// The holder is the calling thread's current_thread_number(), which the thread that forks
// keeps in the child: a lock taken before a fork and released in the child (the thread records'
// lock, os/fork_gate.hpp) is held by that thread on both sides.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/assert.hpp"

namespace metaspace {

class Mutex {
 public:
  void lock() {
    mutex_.lock();
    MS_DEBUG_ONLY(owner_.store(current_thread_number(), std::memory_order_relaxed);)
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    MS_DEBUG_ONLY(owner_.store(current_thread_number(), std::memory_order_relaxed);)
    return true;
  }
  void unlock() {
    MS_DEBUG_ONLY(owner_.store(0, std::memory_order_relaxed);)
    mutex_.unlock();
  }
#ifdef METASPACE_ASSERTS
  // Only the holder reads its own number: it wrote it after taking the mutex, and clears it
  // before letting go.
  bool held_by_current_thread() const {
    return owner_.load(std::memory_order_relaxed) == current_thread_number();
  }
#endif

 private:
  std::mutex mutex_;
#ifdef METASPACE_ASSERTS
  std::atomic<uint32_t> owner_{0};  // the holder's current_thread_number(); 0 when free
#endif
};

#ifdef METASPACE_ASSERTS
inline bool held_by_current_thread(const Mutex& m) { return m.held_by_current_thread(); }
#endif

}  // namespace metaspace
