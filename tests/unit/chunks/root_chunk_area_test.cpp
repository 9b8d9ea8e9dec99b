// Buddy operations inside one root chunk area: split, merge, in-place enlargement. The area only
// needs an aligned address range (headers live outside the chunk memory), so nothing is committed.
#include "chunks/root_chunk_area.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

constexpr size_t kRoot = 4 * MiB;

class RootChunkAreaTest : public ::testing::Test {
 protected:
  RootChunkAreaTest() {
    root_ = pool_.allocate();
    root_->base = range_.base();
    root_->bytes = kRoot;
    root_->level = 0;
    root_->state = Chunk::State::kInUse;
  }

  // Walks the area like the chunk manager's verify does.
  ::testing::AssertionResult area_ok(
      RootChunkArea::FreeBuddies buddies = RootChunkArea::FreeBuddies::kAlwaysMerged) {
    size_t chunks = 0;
    size_t free_chunks = 0;
    if (!RootChunkArea::verify(root_, nullptr, geometry_, buddies, &chunks, &free_chunks) ||
        !pool_.verify() || !lists_.verify()) {
      return ::testing::AssertionFailure() << ms_last_error_text();
    }
    if (chunks != pool_.in_use() || free_chunks != lists_.count()) {
      return ::testing::AssertionFailure() << chunks << " chunks, " << pool_.in_use()
                                           << " headers, " << free_chunks << " free, "
                                           << lists_.count() << " listed";
    }
    return ::testing::AssertionSuccess();
  }

  std::vector<int> levels() const {
    std::vector<int> result;
    for (Chunk* c = root_; c != nullptr; c = c->next_in_area) result.push_back(c->level);
    return result;
  }

  test::ReservedRange range_{kRoot, kRoot};
  ChunkGeometry geometry_{kRoot};
  ChunkHeaderPool pool_;
  FreeChunkLists lists_{geometry_.levels()};
  Chunk* root_;
};

TEST_F(RootChunkAreaTest, SplitKeepsTheLeaderAndFilesTheFollowers) {
  RootChunkArea::split(root_, 3, pool_, lists_);
  EXPECT_EQ(root_->level, 3);
  EXPECT_EQ(root_->bytes, 512 * KiB);
  EXPECT_EQ(root_->base, range_.base());
  EXPECT_EQ(levels(), (std::vector<int>{3, 3, 2, 1}));
  for (int l = 1; l <= 3; l++) EXPECT_EQ(lists_.count(l), 1u) << "level " << l;
  EXPECT_TRUE(area_ok());
  EXPECT_TRUE(RootChunkArea::is_leader(root_, geometry_));
  Chunk* buddy = RootChunkArea::whole_buddy(root_, geometry_);
  ASSERT_NE(buddy, nullptr);
  EXPECT_EQ(buddy->base, range_.base() + 512 * KiB);
  EXPECT_FALSE(RootChunkArea::is_leader(buddy, geometry_));
  EXPECT_EQ(RootChunkArea::whole_buddy(buddy, geometry_), root_);
  // The level-2 chunk's buddy (the first megabyte) is split: no whole buddy.
  EXPECT_EQ(RootChunkArea::whole_buddy(buddy->next_in_area, geometry_), nullptr);
}

TEST_F(RootChunkAreaTest, SplitHandsTheCommittedPrefixOn) {
  root_->committed_bytes = 3 * MiB;
  RootChunkArea::split(root_, 2, pool_, lists_);  // 1 MiB + 1 MiB + 2 MiB
  Chunk* second = root_->next_in_area;
  Chunk* third = second->next_in_area;
  EXPECT_EQ(root_->committed_bytes, MiB);
  EXPECT_EQ(second->committed_bytes, MiB);
  EXPECT_EQ(third->committed_bytes, MiB) << "first half of the 2 MiB follower";
  EXPECT_TRUE(area_ok());
}

TEST_F(RootChunkAreaTest, MergeRebuildsTheRoot) {
  RootChunkArea::split(root_, 12, pool_, lists_);
  EXPECT_EQ(pool_.in_use(), 13u);
  root_->state = Chunk::State::kFree;
  Chunk* merged = RootChunkArea::merge(root_, geometry_, pool_, lists_);
  EXPECT_EQ(merged, root_) << "the leader's header survives";
  EXPECT_EQ(merged->level, 0);
  EXPECT_EQ(merged->bytes, kRoot);
  EXPECT_EQ(merged->next_in_area, nullptr);
  EXPECT_EQ(pool_.in_use(), 1u);
  EXPECT_EQ(lists_.count(), 0u) << "every buddy was taken off its list";
  lists_.add(merged);
  EXPECT_TRUE(area_ok());
}

TEST_F(RootChunkAreaTest, MergeOfAFollowerContinuesWithTheLeader) {
  RootChunkArea::split(root_, 2, pool_, lists_);  // [A:2 in use][B:2 free][C:1 free]
  Chunk* b = root_->next_in_area;
  lists_.remove(b);
  b->state = Chunk::State::kInUse;
  root_->state = Chunk::State::kFree;
  lists_.add(root_);  // A free, B in use: nothing merges
  EXPECT_TRUE(area_ok());
  lists_.remove(b);
  b->state = Chunk::State::kFree;
  Chunk* merged = RootChunkArea::merge(b, geometry_, pool_, lists_);
  EXPECT_EQ(merged, root_);
  EXPECT_EQ(merged->level, 0);
  EXPECT_EQ(pool_.in_use(), 1u);
}

TEST_F(RootChunkAreaTest, MergeStopsAtABuddyInUse) {
  RootChunkArea::split(root_, 4, pool_, lists_);  // [A:4 in use][B:4][3][2][1]
  Chunk* b = root_->next_in_area;
  lists_.remove(b);  // B comes back: its buddy A is in use
  Chunk* merged = RootChunkArea::merge(b, geometry_, pool_, lists_);
  EXPECT_EQ(merged, b);
  EXPECT_EQ(merged->level, 4);
  lists_.add(merged);
  EXPECT_TRUE(area_ok());
}

TEST_F(RootChunkAreaTest, EnlargeAbsorbsAFreeFollower) {
  RootChunkArea::split(root_, 4, pool_, lists_);
  root_->committed_bytes = root_->bytes;
  EXPECT_TRUE(RootChunkArea::enlarge(root_, geometry_, pool_, lists_));
  EXPECT_EQ(root_->level, 3);
  EXPECT_EQ(root_->bytes, 512 * KiB);
  EXPECT_EQ(root_->committed_bytes, 256 * KiB) << "the follower brought nothing committed";
  EXPECT_TRUE(root_->is_free() == false);
  EXPECT_TRUE(area_ok());
  // Up to the root, one level at a time.
  while (RootChunkArea::enlarge(root_, geometry_, pool_, lists_)) {
  }
  EXPECT_EQ(root_->level, 0);
  EXPECT_FALSE(RootChunkArea::enlarge(root_, geometry_, pool_, lists_)) << "a root has no buddy";
  EXPECT_TRUE(area_ok());
}

TEST_F(RootChunkAreaTest, EnlargeRefusesFollowersAndSplitOrBusyBuddies) {
  RootChunkArea::split(root_, 3, pool_, lists_);  // [A:3][B:3][2][1]
  Chunk* b = root_->next_in_area;
  lists_.remove(b);
  b->state = Chunk::State::kInUse;
  EXPECT_FALSE(RootChunkArea::enlarge(b, geometry_, pool_, lists_)) << "follower";
  EXPECT_FALSE(RootChunkArea::enlarge(root_, geometry_, pool_, lists_)) << "buddy in use";
  Chunk* leader = root_;
  RootChunkArea::split(b, 4, pool_, lists_);  // B splits: A's buddy is no longer whole
  EXPECT_FALSE(RootChunkArea::enlarge(leader, geometry_, pool_, lists_)) << "buddy split";
  EXPECT_TRUE(area_ok());
}

TEST_F(RootChunkAreaTest, VerifyCatchesUnmergedFreeBuddies) {
  RootChunkArea::split(root_, 2, pool_, lists_);
  root_->state = Chunk::State::kFree;
  lists_.add(root_);  // A and its free buddy B side by side, not merged
  EXPECT_TRUE(area_ok(RootChunkArea::FreeBuddies::kMayStayApart))
      << "fine where merging is off (policy none)";
  EXPECT_FALSE(area_ok(RootChunkArea::FreeBuddies::kAlwaysMerged));
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
}

TEST_F(RootChunkAreaTest, VerifyCatchesAGapInTheTiling) {
  RootChunkArea::split(root_, 1, pool_, lists_);
  root_->next_in_area->base += KiB;
  EXPECT_FALSE(area_ok());
}

}  // namespace
}  // namespace metaspace
