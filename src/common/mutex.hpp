// A std::mutex that knows its holder in assert builds (its LockOwner, common/lock_owner.hpp, for
// MS_ASSERT_LOCKED). Release builds: the std::mutex alone. Meets Lockable, so
// std::lock_guard<Mutex> and std::unique_lock<Mutex> work with it.
#pragma once

#include <mutex>

#include "common/lock_owner.hpp"

namespace metaspace {

class Mutex {
 public:
  void lock() {
    mutex_.lock();
    owner_.acquired();
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    owner_.acquired();
    return true;
  }
  void unlock() {
    owner_.released();
    mutex_.unlock();
  }
  const LockOwner& owner() const { return owner_; }

 private:
  std::mutex mutex_;
  [[no_unique_address]] LockOwner owner_;
};

#ifndef METASPACE_ASSERTS
static_assert(sizeof(Mutex) == sizeof(std::mutex), "release builds: the std::mutex alone");
#endif

}  // namespace metaspace
