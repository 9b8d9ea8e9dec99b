// The exclusion on one loader's state: between its owner's calls and the library's readers
// (statistics, reports, ms_verify, destruction).
//
// A loader that is not shared is called by one thread at a time (the runtime's loader lock, the
// header's contract), so its owner never contends with itself, only, rarely, with a reader. Its
// out-of-line calls (a free, a reuse, a new chunk) therefore only flip `busy_`: one exchange and
// one plain store. A std::mutex costs a locked compare-exchange, a locked exchange on unlock and
// two calls (about 7 % of a free in `perf`, 4–5 ns). Readers, and every call on a shared
// loader, take the mutex first and then wait for the gate, so they queue on the mutex and only
// ever spin on an owner's call in flight (which is short: at worst a chunk commit).
//
// Invariant: whoever changes the loader's state holds the gate (busy_ == 1 by its exchange).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace metaspace {

class LoaderLock {
 public:
  // The owner's entry: true if the gate was free (then leave_owner()); false if a reader holds
  // it, in which case the owner takes lock() like anyone else.
  bool try_enter_owner() { return busy_.exchange(1, std::memory_order_acquire) == 0; }
  void leave_owner() { busy_.store(0, std::memory_order_release); }

  // BasicLockable / Lockable for readers and shared loaders: the mutex, then the gate.
  void lock() {
    mutex_.lock();
    enter_gate();
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    if (busy_.exchange(1, std::memory_order_acquire) != 0) {
      mutex_.unlock();
      return false;
    }
    return true;
  }
  void unlock() {
    busy_.store(0, std::memory_order_release);
    mutex_.unlock();
  }

 private:
  void enter_gate() {
    // Only an owner call in flight can hold it here (every other party holds the mutex first).
    for (unsigned spins = 0; busy_.exchange(1, std::memory_order_acquire) != 0; spins++) {
      if (spins > 64) std::this_thread::yield();
    }
  }

  std::mutex mutex_;
  std::atomic<uint32_t> busy_{0};
};

// The owner's side as a scope: the gate alone when free, else the full lock.
class OwnerScope {
 public:
  explicit OwnerScope(LoaderLock& lock, bool shared) : lock_(lock) {
    full_ = shared || !lock.try_enter_owner();
    if (full_) lock.lock();
  }
  ~OwnerScope() {
    if (full_) {
      lock_.unlock();
    } else {
      lock_.leave_owner();
    }
  }
  OwnerScope(const OwnerScope&) = delete;
  OwnerScope& operator=(const OwnerScope&) = delete;

 private:
  LoaderLock& lock_;
  bool full_ = false;
};

}  // namespace metaspace
