// Layer 2: the commit mask, one bit per granule. The mask never touches memory, but its base must
// be a real address range, so each test reserves one (address space only).
#include "commit/commit_mask.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "common/units.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

constexpr size_t kGranule = 16 * KiB;

class CommitMaskTest : public ::testing::Test {
 protected:
  // 200 granules: the bits span four 64-bit words, the last one partly.
  test::ReservedRange range_{200 * kGranule, kGranule};
  // The words live wherever the owner puts them (a node: its bookkeeping range); here, the test.
  std::vector<uint64_t> words_ = std::vector<uint64_t>(CommitMask::words_for(200), 0);
  CommitMask mask_{range_.base(), range_.bytes(), kGranule, words_.data()};
  char* at(size_t granule) const { return range_.base() + granule * kGranule; }
};

TEST_F(CommitMaskTest, StartsEmpty) {
  EXPECT_EQ(mask_.granules(), 200u);
  EXPECT_EQ(mask_.granule_bytes(), kGranule);
  EXPECT_EQ(mask_.committed_granules(), 0u);
  EXPECT_EQ(mask_.committed_bytes_in(range_.base(), range_.bytes()), 0u);
  EXPECT_TRUE(mask_.verify());
}

TEST_F(CommitMaskTest, MarkingReturnsOnlyTheGranulesThatChanged) {
  EXPECT_EQ(mask_.mark_committed(at(10), 5 * kGranule), 5u);
  EXPECT_TRUE(mask_.verify());
  // Overlapping 12..17: three of them are new.
  EXPECT_EQ(mask_.mark_committed(at(12), 6 * kGranule), 3u);
  EXPECT_EQ(mask_.committed_granules(), 8u);
  EXPECT_EQ(mask_.committed_bytes(), 8 * kGranule);
  EXPECT_TRUE(mask_.is_committed(at(10)));
  EXPECT_TRUE(mask_.is_committed(at(17) + kGranule - 1));
  EXPECT_FALSE(mask_.is_committed(at(18)));
  EXPECT_FALSE(mask_.is_committed(at(9) + kGranule - 1));
  EXPECT_TRUE(mask_.verify());

  EXPECT_EQ(mask_.mark_uncommitted(at(8), 4 * kGranule), 2u);  // 10 and 11
  EXPECT_EQ(mask_.mark_uncommitted(at(8), 4 * kGranule), 0u);
  EXPECT_EQ(mask_.committed_granules(), 6u);
  EXPECT_TRUE(mask_.verify());
}

TEST_F(CommitMaskTest, RangesAcrossWordBoundaries) {
  EXPECT_EQ(mask_.mark_committed(at(60), 140 * kGranule), 140u);  // up to the last granule
  EXPECT_EQ(mask_.committed_granules(), 140u);
  for (size_t g : {59u, 60u, 63u, 64u, 127u, 128u, 199u}) {
    EXPECT_EQ(mask_.bit(g), g >= 60) << "granule " << g;
  }
  EXPECT_EQ(mask_.committed_bytes_in(range_.base(), range_.bytes()), 140 * kGranule);
  EXPECT_EQ(mask_.committed_bytes_in(at(64), 64 * kGranule), 64 * kGranule);
  EXPECT_TRUE(mask_.verify());
}

TEST_F(CommitMaskTest, CommittedBytesInCountsPartialGranules) {
  mask_.mark_committed(at(1), 2 * kGranule);  // granules 1 and 2
  // Starts in the middle of uncommitted granule 0, ends in the middle of committed granule 1.
  EXPECT_EQ(mask_.committed_bytes_in(at(0) + kGranule / 2, kGranule), kGranule / 2);
  // Starts in the middle of granule 1, ends a quarter into granule 3 (uncommitted).
  EXPECT_EQ(mask_.committed_bytes_in(at(1) + kGranule / 2, 2 * kGranule),
            kGranule / 2 + kGranule);
  // Inside one committed granule.
  EXPECT_EQ(mask_.committed_bytes_in(at(2) + 100, 1000), 1000u);
  EXPECT_EQ(mask_.committed_bytes_in(at(2) + 100, 0), 0u);
  // The last granule, from its middle to the end of the mask.
  mask_.mark_committed(at(199), kGranule);
  EXPECT_EQ(mask_.committed_bytes_in(at(199) + kGranule / 2, kGranule / 2), kGranule / 2);
  EXPECT_TRUE(mask_.verify());
}

TEST_F(CommitMaskTest, GranuleIndexOfInnerAddresses) {
  EXPECT_EQ(mask_.granule_index(at(0)), 0u);
  EXPECT_EQ(mask_.granule_index(at(5) + kGranule - 1), 5u);
  EXPECT_EQ(mask_.granule_index(at(6)), 6u);
}

}  // namespace
}  // namespace metaspace
