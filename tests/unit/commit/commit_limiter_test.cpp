// Layer 2: the commit limiter — a hard cap that refuses cleanly and a soft threshold that is
// reported once per crossing — and how a node behaves when the cap stops it halfway.
#include "commit/commit_limiter.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "commit/gc_threshold_policy.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "support/gc_callbacks.hpp"
#include "support/layer_fixtures.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {
namespace {

using test::GcCallbacks;

TEST(CommitLimiter, CapRefusesWithoutCharging) {
  CommitLimiter limiter(MiB);
  EXPECT_TRUE(limiter.try_charge(768 * KiB));
  EXPECT_FALSE(limiter.try_charge(512 * KiB));
  EXPECT_EQ(limiter.committed_bytes(), 768 * KiB);
  EXPECT_TRUE(limiter.try_charge(256 * KiB));  // exactly up to the cap
  EXPECT_FALSE(limiter.try_charge(1));
  EXPECT_FALSE(limiter.try_charge(SIZE_MAX));  // must not wrap around
  EXPECT_EQ(limiter.committed_bytes(), MiB);
  limiter.release(512 * KiB);
  EXPECT_EQ(limiter.committed_bytes(), 512 * KiB);
  EXPECT_TRUE(limiter.try_charge(512 * KiB));
}

// A cap of zero is not "nothing may be committed" but "no cap" (max_committed_bytes = 0 in the
// settings means unlimited).
TEST(CommitLimiter, CapOfZeroMeansUnlimited) {
  CommitLimiter limiter(0);
  EXPECT_EQ(limiter.cap_bytes(), 0u);
  EXPECT_TRUE(limiter.try_charge(64 * GiB));
  EXPECT_TRUE(limiter.try_charge(64 * GiB));
  EXPECT_EQ(limiter.committed_bytes(), 128 * GiB);
  limiter.release(128 * GiB);
  EXPECT_EQ(limiter.committed_bytes(), 0u);
}

TEST(CommitLimiter, ThresholdCrossingIsDeliveredOnceAndRearmedBelow) {
  CommitLimiter limiter(0);
  GcCallbacks events;
  auto* ms = reinterpret_cast<ms_metaspace_t*>(&events);  // only passed through
  limiter.set_threshold(MiB, GcCallbacks::record, &events);
  EXPECT_EQ(limiter.threshold_bytes(), MiB);

  ASSERT_TRUE(limiter.try_charge(512 * KiB));
  limiter.deliver_threshold_event(ms);
  EXPECT_EQ(events.calls, 0) << "below the threshold";

  ASSERT_TRUE(limiter.try_charge(512 * KiB));  // reaches it
  ASSERT_TRUE(limiter.try_charge(512 * KiB));  // still above: no second event
  EXPECT_EQ(events.calls, 0) << "only noted, never called from inside the charge";
  limiter.deliver_threshold_event(ms);
  EXPECT_EQ(events.calls, 1);
  EXPECT_EQ(events.last_committed, 1536 * KiB);
  EXPECT_EQ(events.last_ms, ms);
  limiter.deliver_threshold_event(ms);
  EXPECT_EQ(events.calls, 1) << "delivered once";

  limiter.release(1024 * KiB);  // below: re-armed
  limiter.deliver_threshold_event(ms);
  EXPECT_EQ(events.calls, 1);
  ASSERT_TRUE(limiter.try_charge(512 * KiB));
  limiter.deliver_threshold_event(ms);
  EXPECT_EQ(events.calls, 2);
}

TEST(CommitLimiter, SettingAThresholdBelowTheLevelReportsAtOnce) {
  CommitLimiter limiter(0);
  ASSERT_TRUE(limiter.try_charge(2 * MiB));
  GcCallbacks events;
  limiter.set_threshold(MiB, GcCallbacks::record, &events);
  limiter.deliver_threshold_event(nullptr);
  EXPECT_EQ(events.calls, 1);
  EXPECT_EQ(events.last_committed, 2 * MiB);
}

TEST(CommitLimiter, ThresholdOfZeroNeverReports) {
  CommitLimiter limiter(0);
  GcCallbacks events;
  limiter.set_threshold(0, GcCallbacks::record, &events);
  ASSERT_TRUE(limiter.try_charge(GiB));
  limiter.deliver_threshold_event(nullptr);
  EXPECT_EQ(events.calls, 0);
}

// A charge the cap refuses is a threshold event too, even when it jumps
// over threshold and cap in one step, and even after the crossing was reported already.
TEST(CommitLimiter, CapRefusalIsReportedEveryTime) {
  CommitLimiter limiter(4 * MiB);
  GcCallbacks events;
  limiter.set_threshold(3 * MiB, GcCallbacks::record, &events);
  ASSERT_TRUE(limiter.try_charge(2 * MiB));
  EXPECT_FALSE(limiter.try_charge(2560 * KiB));  // 4.5 MiB: over threshold and cap at once
  EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kDelivered);
  EXPECT_EQ(events.calls, 1);
  EXPECT_EQ(events.last_committed, 2 * MiB) << "nothing was charged";
  ASSERT_TRUE(limiter.try_charge(2 * MiB));     // at the cap
  limiter.deliver_threshold_event(nullptr);     // the crossing itself
  int after_crossing = events.calls;
  for (int i = 0; i < 5; i++) {
    EXPECT_FALSE(limiter.try_charge(4 * KiB));
    EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kDelivered) << "refusal " << i;
  }
  EXPECT_EQ(events.calls, after_crossing + 5);
}

TEST(CommitLimiter, DeliveryKeepsTheCallersError) {
  CommitLimiter limiter(MiB);
  limiter.set_threshold(MiB / 2, [](ms_metaspace_t*, size_t, void*) {
    ms_stats_t st;
    (void)ms_get_stats(nullptr, &st);  // fails: records MS_ERR_INVALID_ARGUMENT
  }, nullptr);
  EXPECT_FALSE(limiter.try_charge(2 * MiB));
  fail(MS_ERR_LIMIT, "the caller's reason");
  EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kDelivered);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  EXPECT_STREQ(ms_last_error_text(), "metaspace limit reached: the caller's reason");
}

// HotSpot's MinMetaspaceFreeRatio / MaxMetaspaceFreeRatio / MinMetaspaceExpansion.
TEST(GcThresholdPolicy, MovesTheThresholdIntoTheBand) {
  GcThresholdPolicy p{40, 70, 256 * KiB, 4 * KiB};
  // Raised: 6 MiB committed, at least 40 % free → 10 MiB.
  EXPECT_EQ(p.next_threshold(6 * MiB, 6 * MiB, 0), 10 * MiB);
  // Lowered: 3 MiB committed, at most 70 % free → 10 MiB.
  EXPECT_EQ(p.next_threshold(3 * MiB, 64 * MiB, 0), 10 * MiB);
  // Inside the band: unchanged.
  EXPECT_EQ(p.next_threshold(6 * MiB, 12 * MiB, 0), 12 * MiB);
  // Tiny metaspace: at least the minimum expansion above committed (granule aligned).
  EXPECT_EQ(p.next_threshold(100 * KiB, 100 * KiB, 0), 356 * KiB);
  // Never above the cap.
  EXPECT_EQ(p.next_threshold(6 * MiB, 6 * MiB, 8 * MiB), 8 * MiB);
  // Idempotent: the runtime applying it from the callback and the library after it agree.
  for (size_t c : {size_t{0}, 5 * KiB, 3 * MiB + 7, 100 * MiB}) {
    for (size_t t : {size_t{4096}, 2 * MiB, 1 * GiB}) {
      size_t once = p.next_threshold(c, t, 0);
      EXPECT_EQ(p.next_threshold(c, once, 0), once) << c << " " << t;
      EXPECT_GT(once, c);
    }
  }
  // Saturates instead of wrapping.
  EXPECT_GT(p.next_threshold(SIZE_MAX / 2, 0, 0), SIZE_MAX / 2);
  // All zero: fixed.
  GcThresholdPolicy fixed{0, 0, 0, 4 * KiB};
  EXPECT_EQ(fixed.next_threshold(6 * MiB, 1 * MiB, 0), 1 * MiB);
}

TEST(CommitLimiter, AfterTheCallbackTheThresholdMovesAndRearms) {
  CommitLimiter limiter(0);
  limiter.set_policy({40, 70, 256 * KiB, 4 * KiB});
  GcCallbacks events;
  limiter.set_threshold(MiB, GcCallbacks::record, &events);
  ASSERT_TRUE(limiter.try_charge(1200 * KiB));
  EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kDelivered);
  EXPECT_EQ(events.calls, 1);
  EXPECT_EQ(limiter.threshold_bytes(), 2000 * KiB) << "1200 KiB / 0.6";
  ASSERT_TRUE(limiter.try_charge(700 * KiB));  // 1.88 MiB: below
  EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kNone);
  ASSERT_TRUE(limiter.try_charge(200 * KiB));  // above 2 MiB: reported again
  EXPECT_EQ(limiter.deliver_threshold_event(nullptr), CommitLimiter::Delivery::kDelivered);
  EXPECT_EQ(events.calls, 2);
  // The runtime unloaded most of it: gc_done lowers the threshold (at most 70 % free).
  limiter.release(1900 * KiB);  // 200 KiB left
  EXPECT_EQ(limiter.gc_done(), 668 * KiB) << "200 KiB / 0.3, rounded up to a granule";
}

// A node under a tiny cap: the commit stops at the cap with MS_ERR_LIMIT; what was committed
// before the failing run stays committed, and the mask and the limiter agree on it.
TEST(CommitLimiter, NodeStopsCleanlyAtTheCap) {
  const size_t granule = 16 * KiB;
  CommitLimiter limiter(64 * KiB);
  auto node = VirtualSpaceNode::create({8 * MiB, 4 * MiB, granule, false}, 0, limiter);
  ASSERT_NE(node, nullptr) << ms_last_error_text();
  char* base = node->allocate_root_chunk();

  // One run of 8 granules is over the cap as a whole: nothing is committed.
  EXPECT_EQ(node->ensure_committed(base, 8 * granule), MS_ERR_LIMIT);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  EXPECT_EQ(node->committed_bytes(), 0u);
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();

  // Granule 2 committed first splits the request into runs [0,2) and [3,8): the first fits
  // (48 KiB in all), the second does not.
  ASSERT_EQ(node->ensure_committed(base + 2 * granule, granule), MS_OK);
  EXPECT_EQ(node->ensure_committed(base, 8 * granule), MS_ERR_LIMIT);
  EXPECT_EQ(node->committed_bytes(), 3 * granule);
  EXPECT_EQ(node->mask().committed_bytes_in(base, 3 * granule), 3 * granule);
  EXPECT_EQ(limiter.committed_bytes(), node->committed_bytes());
  EXPECT_TRUE(node->verify()) << ms_last_error_text();

  ASSERT_EQ(node->uncommit(base, 4 * MiB), MS_OK);
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();
}

}  // namespace
}  // namespace metaspace
