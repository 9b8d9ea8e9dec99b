// The lock of one loader: 1 byte instead of a 40-byte std::mutex, because a micro loader object is
// 128 bytes and there may be a million of them. Uncontended lock and unlock are one atomic each;
// a waiter sleeps in the kernel (std::atomic::wait: libstdc++ parks it on a futex of a shared
// waiter table). Meets Lockable, so std::lock_guard / std::unique_lock (try_to_lock) work with it.
//
// States: 0 free, 1 held, 2 held with (possibly) sleeping waiters. Assert builds also record the
// holder (its LockOwner, common/lock_owner.hpp, for MS_ASSERT_LOCKED): 8 bytes instead of 1.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/lock_owner.hpp"

namespace metaspace {

class LoaderLock {
 public:
  void lock() {
    uint8_t expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      lock_contended();
    }
    owner_.acquired();
  }
  bool try_lock() {
    uint8_t expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      return false;
    }
    owner_.acquired();
    return true;
  }
  void unlock() {
    owner_.released();
    if (state_.exchange(0, std::memory_order_release) == 2) state_.notify_one();
  }
  const LockOwner& owner() const { return owner_; }

 private:
  void lock_contended() {
    // A slow path holds the lock for well under a microsecond: spin briefly before sleeping.
    for (int i = 0; i < 64; i++) {
      uint8_t expected = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(expected, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return;
      }
    }
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  std::atomic<uint8_t> state_{0};
  [[no_unique_address]] LockOwner owner_;
};

#ifndef METASPACE_ASSERTS
static_assert(sizeof(LoaderLock) == 1, "release builds: the state byte alone");
#endif

}  // namespace metaspace
