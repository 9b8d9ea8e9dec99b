// Layer 3: one node — carving root chunk areas, committing and uncommitting granule runs.
#include "vspace/virtual_space_node.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "common/units.hpp"
#include "support/layer_fixtures.hpp"
#include "proc_memory.hpp"

namespace metaspace {
namespace {

constexpr size_t kRoot = 4 * MiB;
constexpr size_t kGranule = 16 * KiB;

NodeGeometry geometry(bool protect) {
  return {.reserve_bytes = 16 * MiB,
          .root_chunk_bytes = kRoot,
          .granule_bytes = kGranule,
          .protect_uncommitted = protect};
}

TEST(VirtualSpaceNode, CarvesAlignedRootChunksUntilFull) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(false), 0, limiter);
  ASSERT_NE(node, nullptr) << ms_last_error_text();
  EXPECT_TRUE(is_aligned(node->base(), kRoot));
  EXPECT_EQ(node->reserved_bytes(), 16 * MiB);
  EXPECT_EQ(node->root_chunks_capacity(), 4u);
  for (size_t i = 0; i < 4; i++) {
    EXPECT_EQ(node->allocate_root_chunk(), node->base() + i * kRoot);
    EXPECT_EQ(node->root_chunks_carved(), i + 1);
    EXPECT_TRUE(node->verify()) << ms_last_error_text();
  }
  EXPECT_EQ(node->allocate_root_chunk(), nullptr);
  EXPECT_EQ(node->root_chunks_carved(), 4u);
  EXPECT_EQ(node->committed_bytes(), 0u) << "carving commits nothing";
  EXPECT_TRUE(node->contains(node->base()));
  EXPECT_FALSE(node->contains(node->end()));
}

// In checked mode every committed run is one kernel call (mprotect); the count shows that
// ensure_committed only touches the granules that are not committed yet, run by run.
TEST(VirtualSpaceNode, EnsureCommittedCommitsMissingRunsOnly) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(/*protect=*/true), 0, limiter);
  ASSERT_NE(node, nullptr);
  char* base = node->allocate_root_chunk();

  ASSERT_EQ(node->ensure_committed(base + 100, 1), MS_OK);  // inside granule 0
  EXPECT_EQ(node->commit_calls(), 1u);
  EXPECT_EQ(node->committed_bytes(), kGranule);
  ASSERT_EQ(node->ensure_committed(base, kGranule), MS_OK);
  EXPECT_EQ(node->commit_calls(), 1u) << "already committed: no kernel call";

  // Starts and ends inside granules 3 and 4: both are committed.
  ASSERT_EQ(node->ensure_committed(base + 3 * kGranule + 10, kGranule), MS_OK);
  EXPECT_EQ(node->commit_calls(), 2u);
  // Granules 0..7 with 0, 3, 4 committed: two runs, [1,3) and [5,8).
  ASSERT_EQ(node->ensure_committed(base, 8 * kGranule), MS_OK);
  EXPECT_EQ(node->commit_calls(), 4u);
  EXPECT_EQ(node->committed_bytes(), 8 * kGranule);
  EXPECT_EQ(limiter.committed_bytes(), 8 * kGranule);
  std::memset(base, 0x11, 8 * kGranule);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();
}

TEST(VirtualSpaceNode, UncommitReturnsCommittedRuns) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(/*protect=*/true), 0, limiter);
  ASSERT_NE(node, nullptr);
  char* base = node->allocate_root_chunk();
  // Committed: 0, 1, 3, 4, 5.
  ASSERT_EQ(node->ensure_committed(base, 2 * kGranule), MS_OK);
  ASSERT_EQ(node->ensure_committed(base + 3 * kGranule, 3 * kGranule), MS_OK);
  ASSERT_EQ(node->uncommit(base, 8 * kGranule), MS_OK);
  EXPECT_EQ(node->uncommit_calls(), 2u);
  EXPECT_EQ(node->committed_bytes(), 0u);
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();
  // Checked mode: the uncommitted granules are inaccessible again.
  for (const auto& m : proc_memory::mappings_in(base, 8 * kGranule)) EXPECT_EQ(m.perms, "---p");
}

// Without checked mode, access rights change per root chunk area: the first commit in an area
// opens all of it (one kernel call), later commits in it only account granules.
TEST(VirtualSpaceNode, DefaultModeOpensEachAreaOnce) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(/*protect=*/false), 0, limiter);
  ASSERT_NE(node, nullptr);
  char* a0 = node->allocate_root_chunk();
  char* a1 = node->allocate_root_chunk();
  ASSERT_EQ(node->ensure_committed(a0, kGranule), MS_OK);
  ASSERT_EQ(node->ensure_committed(a0 + 2 * kGranule, kGranule), MS_OK);
  EXPECT_EQ(node->commit_calls(), 1u);
  ASSERT_EQ(node->ensure_committed(a1 - kGranule, 2 * kGranule), MS_OK);  // spans both areas
  EXPECT_EQ(node->commit_calls(), 2u);
  EXPECT_EQ(node->committed_bytes(), 4 * kGranule);
  // Two areas opened side by side and uncommitted by madvise: still one mapping.
  ASSERT_EQ(node->uncommit(a0, 2 * kRoot), MS_OK);
  auto maps = proc_memory::mappings_in(a0, 2 * kRoot);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].perms, "rw-p");
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();
}

TEST(VirtualSpaceNode, VerifyReportsMemoryCommittedBeyondTheCarvedPart) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(false), 0, limiter);
  ASSERT_NE(node, nullptr);
  node->allocate_root_chunk();
  // The node serves any range; committing where no chunk can own it is the caller's bug, and
  // verify() must name it.
  ASSERT_EQ(node->ensure_committed(node->base() + kRoot, kGranule), MS_OK);
  EXPECT_FALSE(node->verify());
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
  EXPECT_NE(std::strstr(ms_last_error_text(), "beyond the carved area"), nullptr)
      << ms_last_error_text();
}

TEST(VirtualSpaceNode, DestructionReleasesChargeAndMapping) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(false), 0, limiter);
  ASSERT_NE(node, nullptr);
  char* base = node->allocate_root_chunk();
  ASSERT_EQ(node->ensure_committed(base, MiB), MS_OK);
  EXPECT_EQ(limiter.committed_bytes(), MiB);
  node.reset();
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(proc_memory::mappings_in(base, 16 * MiB).empty());
}

TEST(VirtualSpaceNode, CreateAtATakenAddressFails) {
  CommitLimiter limiter(0);
  auto first = VirtualSpaceNode::create(geometry(false), 0, limiter);
  ASSERT_NE(first, nullptr);
  auto second = VirtualSpaceNode::create(geometry(false),
                                         reinterpret_cast<uintptr_t>(first->base()), limiter);
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
}

TEST(VirtualSpaceNode, InjectedCommitFailureChargesNothing) {
  CommitLimiter limiter(0);
  auto node = VirtualSpaceNode::create(geometry(false), 0, limiter);
  ASSERT_NE(node, nullptr);
  char* base = node->allocate_root_chunk();
  test::FaultGuard fault(os::FaultPoint::kCommit, 1);
  EXPECT_EQ(node->ensure_committed(base, kGranule), MS_ERR_COMMIT_FAILED);
  EXPECT_EQ(node->committed_bytes(), 0u);
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(node->verify()) << ms_last_error_text();
  ASSERT_EQ(node->ensure_committed(base, kGranule), MS_OK) << "the area opens on the retry";
  std::memset(base, 1, kGranule);
}

}  // namespace
}  // namespace metaspace
