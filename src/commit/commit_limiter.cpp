#include "commit/commit_limiter.hpp"

#include <string>

#include "common/error.hpp"
#include "common/verify.hpp"
#include "os/fork_gate.hpp"

namespace metaspace {

bool CommitLimiter::try_charge(size_t bytes) {
  size_t old = committed_bytes_.load(std::memory_order_relaxed);
  size_t now;
  do {
    now = old + bytes;
    if (cap_bytes_ != 0 && (now > cap_bytes_ || now < old)) {
      note_refusal();
      return false;
    }
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

void CommitLimiter::note_refusal() {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  if (threshold_bytes_ == 0) return;
  armed_.store(false, std::memory_order_relaxed);
  pending_.store(true, std::memory_order_relaxed);
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

void CommitLimiter::set_policy(const GcThresholdPolicy& policy) {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  policy_ = policy;
}

size_t CommitLimiter::threshold_bytes() const {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  return threshold_bytes_;
}

size_t CommitLimiter::gc_done() {
  std::lock_guard<std::mutex> guard(threshold_lock_);
  if (threshold_bytes_ == 0) return 0;
  size_t committed = committed_bytes();
  threshold_bytes_ = policy_.next_threshold(committed, threshold_bytes_, cap_bytes_);
  armed_.store(committed < threshold_bytes_, std::memory_order_relaxed);
  return threshold_bytes_;
}

namespace {

// The limiters whose callback the calling thread is inside, innermost first: frames on its
// stack, unlinked also when a callback throws.
struct DeliveryFrame;
thread_local DeliveryFrame* t_deliveries = nullptr;
struct DeliveryFrame {
  const CommitLimiter* limiter;
  DeliveryFrame* outer;
  explicit DeliveryFrame(const CommitLimiter* l) : limiter(l), outer(t_deliveries) {
    t_deliveries = this;
  }
  ~DeliveryFrame() { t_deliveries = outer; }
  DeliveryFrame(const DeliveryFrame&) = delete;
  DeliveryFrame& operator=(const DeliveryFrame&) = delete;
};

}  // namespace

CommitLimiter::Delivery CommitLimiter::deliver_threshold_event(ms_metaspace_t* ms,
                                                                bool (*alive)(ms_metaspace_t*)) {
  if (!pending_.load(std::memory_order_relaxed)) return Delivery::kNone;
  for (const DeliveryFrame* f = t_deliveries; f != nullptr; f = f->outer) {
    if (f->limiter == this) return Delivery::kNone;  // inside its own callback: told already
  }
  ms_gc_callback_t callback;
  void* user;
  {
    std::lock_guard<std::mutex> guard(threshold_lock_);
    if (!pending_.exchange(false, std::memory_order_relaxed)) return Delivery::kNone;
    callback = callback_;
    user = user_;
  }
  if (callback == nullptr) {
    gc_done();
    return Delivery::kNone;
  }
  // The caller may be about to return NULL with its error: whatever the runtime calls from the
  // callback must not replace it.
  KeepLastError keep;
  {
    DeliveryFrame frame(this);
    // Outside the fork gate meanwhile: a runtime's GC may wait for a thread that forks.
    os::OutsideLibrary outside;
    callback(ms, committed_bytes(), user);
  }
  if (!alive(ms)) return Delivery::kOwnerDestroyed;  // this limiter went with it
  gc_done();
  return Delivery::kDelivered;
}

bool CommitLimiter::verify() const {
  size_t committed = committed_bytes();
  MS_VERIFY(cap_bytes_ == 0 || committed <= cap_bytes_, "%zu bytes committed over the cap of %zu",
            committed, cap_bytes_);
  return true;
}

}  // namespace metaspace
