// Layer 3: the list of nodes — grows a node at a time, or is one fixed node (class space).
#include "vspace/virtual_space_list.hpp"

#include <gtest/gtest.h>

#include "common/units.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

constexpr NodeGeometry kGeometry{.reserve_bytes = 8 * MiB,
                                 .root_chunk_bytes = 4 * MiB,
                                 .granule_bytes = 16 * KiB,
                                 .protect_uncommitted = false};

TEST(VirtualSpaceList, ExpandableListGrowsNodeByNode) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
  EXPECT_TRUE(list.ok());
  EXPECT_TRUE(list.nodes().empty()) << "the first node is reserved lazily";
  for (size_t i = 0; i < 5; i++) {
    VirtualSpaceNode* node = nullptr;
    char* p = list.allocate_root_chunk(&node);
    ASSERT_NE(p, nullptr) << ms_last_error_text();
    ASSERT_NE(node, nullptr);
    EXPECT_TRUE(node->contains(p));
    EXPECT_EQ(list.node_containing(p), node);
    EXPECT_EQ(list.nodes().size(), i / 2 + 1);  // two root chunks per node
    EXPECT_TRUE(list.verify()) << ms_last_error_text();
  }
  EXPECT_EQ(list.reserved_bytes(), 24 * MiB);
  EXPECT_EQ(list.node_containing(&limiter), nullptr);
}

TEST(VirtualSpaceList, TotalsSumTheNodesAndSurviveRemoval) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
  VirtualSpaceNode* n1 = nullptr;
  VirtualSpaceNode* n2 = nullptr;
  list.allocate_root_chunk(&n1);
  char* p1 = list.allocate_root_chunk(&n1);
  char* p2 = list.allocate_root_chunk(&n2);
  ASSERT_NE(n1, n2);
  ASSERT_EQ(n1->ensure_committed(p1, MiB), MS_OK);
  ASSERT_EQ(n2->ensure_committed(p2, 2 * MiB), MS_OK);
  EXPECT_EQ(list.committed_bytes(), 3 * MiB);
  EXPECT_EQ(limiter.committed_bytes(), 3 * MiB);
  ASSERT_EQ(n1->uncommit(p1, MiB), MS_OK);
  size_t commits = list.commit_calls();
  size_t uncommits = list.uncommit_calls();
  EXPECT_EQ(uncommits, 1u);

  list.remove_node(n1);
  EXPECT_EQ(list.nodes().size(), 1u);
  EXPECT_EQ(list.commit_calls(), commits) << "counts of removed nodes are kept";
  EXPECT_EQ(list.uncommit_calls(), uncommits);
  EXPECT_EQ(list.committed_bytes(), 2 * MiB);
  list.remove_node(n2);  // a committed node gives its charge back when unmapped
  EXPECT_EQ(limiter.committed_bytes(), 0u);
  EXPECT_TRUE(list.verify());
}

TEST(VirtualSpaceList, FixedListReportsClassSpaceFull) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = false});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list.nodes().size(), 1u) << "the fixed node is reserved at once";
  VirtualSpaceNode* node = nullptr;
  EXPECT_NE(list.allocate_root_chunk(&node), nullptr);
  EXPECT_NE(list.allocate_root_chunk(&node), nullptr);
  node = nullptr;
  EXPECT_EQ(list.allocate_root_chunk(&node), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_CLASS_SPACE_FULL);
  EXPECT_EQ(node, nullptr);
  EXPECT_EQ(list.nodes().size(), 1u);
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
}

TEST(VirtualSpaceList, FixedListAtATakenAddressIsNotOk) {
  CommitLimiter limiter(0);
  VirtualSpaceList first(kGeometry, limiter, {.expandable = false});
  ASSERT_TRUE(first.ok());
  uintptr_t taken = reinterpret_cast<uintptr_t>(first.nodes().front()->base());
  VirtualSpaceList second(kGeometry, limiter, {.expandable = false, .wish = taken});
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
}

TEST(VirtualSpaceList, ReserveFailureWhileGrowingIsAnError) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
  test::FaultGuard fault(os::FaultPoint::kReserve, 1);
  VirtualSpaceNode* node = nullptr;
  EXPECT_EQ(list.allocate_root_chunk(&node), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
  EXPECT_TRUE(list.nodes().empty());
  EXPECT_NE(list.allocate_root_chunk(&node), nullptr) << "the next attempt reserves";
}

}  // namespace
}  // namespace metaspace
