// Chunk level arithmetic for the two root sizes in use: 4 MiB (JEP 387) and 16 MiB (JDK 21+).
#include "chunks/chunk_level.hpp"

#include <gtest/gtest.h>

namespace metaspace {
namespace {

TEST(ChunkGeometry, FourMiBRootsHaveThirteenLevels) {
  ChunkGeometry g(4 * MiB);
  EXPECT_EQ(g.levels(), 13);
  EXPECT_EQ(g.highest_level(), 12);
  EXPECT_EQ(g.bytes(0), 4 * MiB);
  EXPECT_EQ(g.bytes(1), 2 * MiB);
  EXPECT_EQ(g.bytes(12), kMinChunkBytes);
  EXPECT_TRUE(g.valid(0));
  EXPECT_TRUE(g.valid(12));
  EXPECT_FALSE(g.valid(13));
  EXPECT_FALSE(g.valid(-1));
}

TEST(ChunkGeometry, SixteenMiBRootsHaveFifteenLevels) {
  ChunkGeometry g(16 * MiB);
  EXPECT_EQ(g.levels(), 15);
  EXPECT_EQ(g.bytes(14), kMinChunkBytes);
  EXPECT_FALSE(g.valid(15));
  EXPECT_EQ(ChunkGeometry(64 * MiB).levels(), kMaxLevels);
}

TEST(ChunkGeometry, LevelFittingIsTheSmallestChunkThatHolds) {
  ChunkGeometry g(4 * MiB);
  EXPECT_EQ(g.level_fitting(1), 12);
  EXPECT_EQ(g.level_fitting(KiB), 12);
  EXPECT_EQ(g.level_fitting(KiB + 1), 11);
  EXPECT_EQ(g.level_fitting(16 * KiB), 8);
  EXPECT_EQ(g.level_fitting(2 * MiB + 1), 0);
  EXPECT_EQ(g.level_fitting(4 * MiB), 0);
  for (int l = 0; l < g.levels(); l++) EXPECT_EQ(g.level_fitting(g.bytes(l)), l);
}

}  // namespace
}  // namespace metaspace
