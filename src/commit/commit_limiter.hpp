// Layer 2: the global budget of committed memory, shared by the class and the non-class space.
//
// Two limits: a hard cap (max metaspace size) that makes a commit fail cleanly, and a soft GC
// threshold whose crossing is reported to the runtime so that it can unload loaders. The callback
// never runs inside the library's locks: a crossing is only noted here and delivered by the API
// layer once it has released them, so a runtime may call back into the metaspace from it.
//
// The runtime always hears before the cap refuses: a charge the cap turns down counts as a
// crossing too (whatever the threshold), so an allocation that jumps over threshold and cap in
// one step, or that comes after the threshold was already reported, still calls the runtime
// first. After each callback (and whenever the runtime calls gc_done) the threshold moves by
// the GcThresholdPolicy, so a runtime that collected is told again at the next growth.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "commit/gc_threshold_policy.hpp"

namespace metaspace {

class CommitLimiter {
 public:
  // cap_bytes 0: unlimited.
  explicit CommitLimiter(size_t cap_bytes) : cap_bytes_(cap_bytes) {}

  size_t cap_bytes() const { return cap_bytes_; }
  size_t committed_bytes() const { return committed_bytes_.load(std::memory_order_relaxed); }

  // Charges `bytes` if the cap allows it; false (nothing charged) if not, and the refusal is
  // noted as a threshold event.
  bool try_charge(size_t bytes);
  void release(size_t bytes);

  // threshold 0: no reporting at all.
  void set_threshold(size_t bytes, ms_gc_callback_t callback, void* user);
  size_t threshold_bytes() const;
  void set_policy(const GcThresholdPolicy& policy);
  // Delivers a pending threshold event, if any, then moves the threshold by the policy. Call
  // with no library lock held. True if the callback ran. The calling thread's last error is the
  // same afterwards, whatever the callback called. Not from within this limiter's callback on
  // the same thread (a runtime's GC that allocates metadata itself, refused again): the event
  // stays pending and false is returned, so the refusal reaches the caller instead of a
  // recursion without end (it overflowed the stack).
  // The callback may destroy the metaspace, and this limiter with it: after it, `alive(ms)`
  // says whether anything of it may be touched (kOwnerDestroyed: nothing was).
  enum class Delivery { kNone, kDelivered, kOwnerDestroyed };
  Delivery deliver_threshold_event(ms_metaspace_t* ms,
                                   bool (*alive)(ms_metaspace_t*) = owner_outlives_callbacks);
  // For a limiter that no callback can destroy (tests of this layer).
  static bool owner_outlives_callbacks(ms_metaspace_t*) { return true; }
  // A collection finished: moves the threshold by the policy from the committed level now and
  // re-arms it. Returns the new threshold (0: none set).
  size_t gc_done();

  // Committed within the cap (an event may be pending while armed again: committed fell back
  // below the threshold before the event was delivered). False with the reason in the last error.
  bool verify() const;

 private:
  void note_level(size_t committed);
  void note_refusal();

  const size_t cap_bytes_;
  std::atomic<size_t> committed_bytes_{0};

  mutable std::mutex threshold_lock_;
  size_t threshold_bytes_ = 0;
  ms_gc_callback_t callback_ = nullptr;
  void* user_ = nullptr;
  GcThresholdPolicy policy_;
  // Armed while committed is below the threshold; a crossing disarms it and sets `pending_`,
  // so one crossing gives exactly one callback, and falling below re-arms it.
  std::atomic<bool> armed_{true};
  std::atomic<bool> pending_{false};
};

}  // namespace metaspace
