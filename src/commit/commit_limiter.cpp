#include "commit/commit_limiter.hpp"

namespace metaspace {

bool CommitLimiter::try_charge(size_t bytes) {
  size_t old = committed_bytes_.load(std::memory_order_relaxed);
  size_t now;
  do {
    now = old + bytes;
    if (cap_bytes_ != 0 && (now > cap_bytes_ || now < old)) return false;
  } while (!committed_bytes_.compare_exchange_weak(old, now, std::memory_order_relaxed));
  note_level(now);
  return true;
}

void CommitLimiter::release(size_t bytes) {
  size_t now = committed_bytes_.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  note_level(now);
}

void CommitLimiter::note_level(size_t committed) {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  if (threshold_bytes_ == 0) return;
  if (committed >= threshold_bytes_) {
    if (armed_.exchange(false, std::memory_order_relaxed)) {
      pending_.store(true, std::memory_order_relaxed);
    }
  } else {
    armed_.store(true, std::memory_order_relaxed);
  }
}

void CommitLimiter::set_threshold(size_t bytes, ms_gc_callback_t callback, void* user) {
  {
    std::lock_guard<std::mutex> guard(threshold_lock_);
    threshold_bytes_ = bytes;
    callback_ = callback;
    user_ = user;
    armed_.store(true, std::memory_order_relaxed);
    pending_.store(false, std::memory_order_relaxed);
  }
  note_level(committed_bytes());
}

size_t CommitLimiter::threshold_bytes() const {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  return threshold_bytes_;
}

void CommitLimiter::deliver_threshold_event(ms_metaspace_t* ms) {
  if (!pending_.load(std::memory_order_relaxed)) return;
  ms_gc_callback_t callback;
  void* user;
  {
    std::lock_guard<std::mutex> guard(threshold_lock_);
    if (!pending_.exchange(false, std::memory_order_relaxed)) return;
    callback = callback_;
    user = user_;
  }
  if (callback != nullptr) callback(ms, committed_bytes(), user);
}

}  // namespace metaspace
