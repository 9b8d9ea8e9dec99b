// BinList: exact-size LIFO bins for 1..32 words, "smallest non-empty bin ≥ n" in O(1). What it
// shares with BlockTree and FreeBlocks (best fit, counters, the random model) is in
// free_block_structures_test.cpp; here what only bins do.
#include "arena/bin_list.hpp"

#include <gtest/gtest.h>

#include "unit/arena/free_block_slots.hpp"

namespace metaspace {
namespace {

using test::BlockSlots;

TEST(BinList, ExactSizesRoundTrip) {
  BlockSlots slots(BinList::kBins, BinList::kMaxWords);
  BinList bins;
  for (size_t w = 1; w <= BinList::kMaxWords; w++) {
    bins.add(slots.at(w - 1), w);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_EQ(bins.count(), BinList::kBins);
  EXPECT_EQ(bins.words(), BinList::kBins * (BinList::kBins + 1) / 2);
  // Every size is present, so each request is served by its own bin.
  for (size_t w = BinList::kMaxWords; w >= 1; w--) {
    size_t got = 0;
    EXPECT_EQ(bins.take(w, &got), slots.at(w - 1));
    EXPECT_EQ(got, w);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_TRUE(bins.empty());
  EXPECT_EQ(bins.words(), 0u);
}

TEST(BinList, SameSizeBlocksAreLifo) {
  BlockSlots slots(3, BinList::kMaxWords);
  BinList bins;
  for (size_t i = 0; i < 3; i++) bins.add(slots.at(i), 5);
  EXPECT_EQ(bins.count(), 3u);
  EXPECT_EQ(bins.words(), 15u);
  for (size_t i = 3; i-- > 0;) {
    size_t got = 0;
    EXPECT_EQ(bins.take(5, &got), slots.at(i));
    EXPECT_EQ(got, 5u);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_TRUE(bins.empty());
}

TEST(BinList, OneWordBlocksAreKept) {
  BlockSlots slots(2, BinList::kMaxWords);
  BinList bins;
  bins.add(slots.at(0), 1);
  size_t got = 0;
  EXPECT_EQ(bins.take(1, &got), slots.at(0));
  EXPECT_EQ(got, 1u);
  ASSERT_VERIFIED(bins);
}

}  // namespace
}  // namespace metaspace
