// GrowthPolicy: the default chunk size sequences must be sane for every loader kind and space.
#include "arena/growth_policy.hpp"

#include <gtest/gtest.h>

#include "common/units.hpp"

namespace metaspace {
namespace {

const ms_loader_kind_t kKinds[] = {MS_LOADER_BOOT, MS_LOADER_STANDARD, MS_LOADER_MICRO};
const ms_space_t kSpaces[] = {MS_SPACE_NONCLASS, MS_SPACE_CLASS};

TEST(GrowthPolicy, SequencesArePowersOfTwoAndNeverMoreThanDouble) {
  for (ms_loader_kind_t kind : kKinds) {
    for (ms_space_t space : kSpaces) {
      const std::vector<size_t>& seq = GrowthPolicy::default_sequence(kind, space);
      ASSERT_FALSE(seq.empty());
      for (size_t i = 0; i < seq.size(); i++) {
        EXPECT_TRUE(is_power_of_2(seq[i])) << "kind " << kind << " space " << space;
        EXPECT_GE(seq[i], kMinChunkBytes);
        if (i > 0) {
          EXPECT_LE(seq[i], 2 * seq[i - 1])
              << "kind " << kind << " space " << space << " step " << i << " more than doubles";
        }
      }
    }
  }
}

// A graduated micro loader starts with the smallest chunk, then doubles at every chunk up to a
// cap below the standard loaders'.
TEST(GrowthPolicy, MicroStartsAtTheSmallestChunkThenDoubles) {
  ChunkGeometry geometry(4 * MiB);
  for (ms_space_t space : kSpaces) {
    GrowthPolicy p = GrowthPolicy::for_loader(MS_LOADER_MICRO, space, geometry);
    // The smallest possible granule is a page: a micro loader's first chunk must not need a
    // granule of its own.
    EXPECT_EQ(geometry.bytes(p.level_at(0)), kMinChunkBytes) << "space " << space;
    for (size_t i = 1; i < p.steps(); i++) {
      EXPECT_EQ(geometry.bytes(p.level_at(i)), 2 * geometry.bytes(p.level_at(i - 1)))
          << "space " << space << " step " << i;
    }
    EXPECT_GE(p.steps(), 5u) << "it grows";
    EXPECT_EQ(p.level_at(p.steps() - 1), p.level_at(1000)) << "and stops";
    const std::vector<size_t>& standard = GrowthPolicy::default_sequence(MS_LOADER_STANDARD, space);
    EXPECT_LE(geometry.bytes(p.level_at(1000)), standard.back());
  }
}

// A standard loader's non-class chunks are never below the default 4 KiB granule, so that no two
// loaders' non-class chunks share one (a dead loader's half would stay committed while its buddy
// lives), and they double from the first, so that a loader of a few dozen KiB has few chunks,
// each a header and an unused end (growth_policy.hpp).
TEST(GrowthPolicy, StandardNonClassChunksHoldWholeGranulesAndDouble) {
  const std::vector<size_t>& seq =
      GrowthPolicy::default_sequence(MS_LOADER_STANDARD, MS_SPACE_NONCLASS);
  for (size_t i = 0; i < seq.size(); i++) {
    EXPECT_GE(seq[i], 4 * KiB) << "step " << i;
    if (i > 0) EXPECT_EQ(seq[i], 2 * seq[i - 1]) << "step " << i;
  }
  size_t held = 0, chunks = 0;
  while (held < 18 * KiB) held += seq[chunks < seq.size() ? chunks : seq.size() - 1], chunks++;
  EXPECT_LE(chunks, 2u) << "chunks for a loader of 18 KiB";
}

TEST(GrowthPolicy, BootStartsLarge) {
  EXPECT_GE(GrowthPolicy::default_sequence(MS_LOADER_BOOT, MS_SPACE_NONCLASS).front(), 1 * MiB);
  EXPECT_GE(GrowthPolicy::default_sequence(MS_LOADER_BOOT, MS_SPACE_CLASS).front(), 256 * KiB);
}

TEST(GrowthPolicy, StandardStartsSmallAndGrows) {
  ChunkGeometry geometry(4 * MiB);
  for (ms_space_t space : kSpaces) {
    const std::vector<size_t>& seq = GrowthPolicy::default_sequence(MS_LOADER_STANDARD, space);
    EXPECT_LE(seq.front(), space == MS_SPACE_NONCLASS ? 8 * KiB : 4 * KiB);
    EXPECT_GT(seq.back(), seq.front());
    GrowthPolicy p = GrowthPolicy::for_loader(MS_LOADER_STANDARD, space, geometry);
    // Smaller level = larger chunk: the level never increases along the sequence.
    for (size_t i = 1; i < 30; i++) EXPECT_LE(p.level_at(i), p.level_at(i - 1));
    // The last entry repeats forever.
    EXPECT_EQ(p.level_at(p.steps() - 1), p.level_at(1000));
    EXPECT_EQ(geometry.bytes(p.level_at(0)), seq.front());
  }
}

TEST(GrowthPolicy, SizesAboveRootChunkAreClamped) {
  ChunkGeometry small_roots(64 * KiB);
  GrowthPolicy boot = GrowthPolicy::for_loader(MS_LOADER_BOOT, MS_SPACE_NONCLASS, small_roots);
  EXPECT_EQ(boot.level_at(0), 0);  // 4 MiB → one 64 KiB root chunk
  EXPECT_EQ(boot.level_at(1), 0);
  GrowthPolicy custom({1 * KiB, 3 * KiB}, small_roots);
  EXPECT_EQ(small_roots.bytes(custom.level_at(0)), 1 * KiB);
  EXPECT_EQ(small_roots.bytes(custom.level_at(1)), 4 * KiB);  // rounded up to a chunk size
}

}  // namespace
}  // namespace metaspace
