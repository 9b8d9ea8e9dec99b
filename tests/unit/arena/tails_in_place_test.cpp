// Retired chunks' small tails left in place (Arena::kSmallestTailWorthFiling), through the public
// API: a standard loader that never frees makes no free-block structure for them, and every
// statistic stays exact while they wait: they are salvaged bytes (waste, inside the free block
// bytes) but no blocks, and neither used nor free in chunks; ms_verify checks the loaders'
// figures against the space counters. Its first free files them as blocks.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>

#include "support/accounting.hpp"
#include "support/api_fixtures.hpp"

namespace {

class TailsInPlace : public metaspace::test::OneStandardLoader {
 protected:
  // ms_verify, the identity, and the loader's used bytes: exactly what it was handed.
  void check(size_t handed_out) {
    ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    ms_stats_t st;
    ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
    for (const ms_space_stats_t& s : st.space) {
      EXPECT_EQ(s.committed_bytes, metaspace::test::accounted_bytes(s));
      EXPECT_EQ(s.free_blocks_bytes, s.deallocated_bytes + s.salvaged_bytes + s.alignment_gap_bytes);
    }
    ms_loader_stats_t ls;
    ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
    EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], handed_out);
  }

};

TEST_F(TailsInPlace, LoaderThatNeverFreesKeepsThemAsSalvagedWaste) {
  // Requests of 8..400 bytes: a chunk retires when the next one does not fit, so its tail is
  // below 400 bytes and stays in place.
  size_t handed_out = 0;
  size_t chunks = 0;
  void* last = nullptr;
  size_t last_bytes = 0;
  for (size_t i = 0; chunks < 4 && i < 100000; i++) {
    size_t n = 8 + (i * 37) % 393;
    last = ms_allocate(l_, MS_SPACE_NONCLASS, n);
    ASSERT_NE(last, nullptr) << ms_last_error_text();
    std::memset(last, 0x5A, n);
    last_bytes = n;
    handed_out += (n + 7) / 8 * 8;
    ms_loader_stats_t ls;
    ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
    if (ls.chunks[MS_SPACE_NONCLASS] != chunks) {
      chunks = ls.chunks[MS_SPACE_NONCLASS];
      check(handed_out);
    }
  }
  ASSERT_GE(chunks, 4u) << "the loader never retired a chunk";
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  const ms_space_stats_t& nc = st.space[MS_SPACE_NONCLASS];
  EXPECT_GT(nc.salvaged_bytes, 0u) << "no tail was left";
  EXPECT_LT(nc.salvaged_bytes, (chunks - 1) * 400);
  EXPECT_EQ(nc.free_blocks_count, 0u) << "tails left in place are not blocks";
  EXPECT_EQ(nc.deallocated_bytes, 0u);
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
  EXPECT_EQ(ls.free_blocks_bytes[MS_SPACE_NONCLASS], nc.salvaged_bytes);
  EXPECT_EQ(ls.free_blocks_count[MS_SPACE_NONCLASS], 0u);
  check(handed_out);

  // The first free: the tails become blocks (the same salvaged bytes), the freed one joins them.
  size_t salvaged = nc.salvaged_bytes;
  ASSERT_EQ(ms_deallocate(l_, last, last_bytes), MS_OK);
  handed_out -= (last_bytes + 7) / 8 * 8;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].salvaged_bytes, salvaged);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].deallocated_bytes, (last_bytes + 7) / 8 * 8);
  EXPECT_GE(st.space[MS_SPACE_NONCLASS].free_blocks_count, 2u);
  check(handed_out);
}

}  // namespace
