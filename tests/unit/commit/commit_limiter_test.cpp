// Layer 2: the commit limiter — a hard cap that refuses cleanly and a soft threshold that is
// reported once per crossing — and how a node behaves when the cap stops it halfway.
#include "commit/commit_limiter.hpp"

#include <gtest/gtest.h>

#include <cstdint>

#include "common/units.hpp"
#include "support/layer_fixtures.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {
namespace {

struct Events {
  int calls = 0;
  size_t last_committed = 0;
  ms_metaspace_t* last_ms = nullptr;
};

void record(ms_metaspace_t* ms, size_t committed_bytes, void* user) {
  auto* e = static_cast<Events*>(user);
  e->calls++;
  e->last_committed = committed_bytes;
  e->last_ms = ms;
}

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
  Events events;
  auto* ms = reinterpret_cast<ms_metaspace_t*>(&events);  // only passed through
  limiter.set_threshold(MiB, record, &events);
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
  Events events;
  limiter.set_threshold(MiB, record, &events);
  limiter.deliver_threshold_event(nullptr);
  EXPECT_EQ(events.calls, 1);
  EXPECT_EQ(events.last_committed, 2 * MiB);
}

TEST(CommitLimiter, ThresholdOfZeroNeverReports) {
  CommitLimiter limiter(0);
  Events events;
  limiter.set_threshold(0, record, &events);
  ASSERT_TRUE(limiter.try_charge(GiB));
  limiter.deliver_threshold_event(nullptr);
  EXPECT_EQ(events.calls, 0);
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
