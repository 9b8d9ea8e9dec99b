// On the real process: 64 MiB committed and touched through the chunk manager (16 root chunks of
// 4 MiB) must leave the resident set once the chunks are returned (and purged, for balanced).
// With policy none the memory stays. The space is a fixed node, which is never unmapped, so any
// drop comes from uncommitting (madvise) and not from releasing the reservation.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "chunks/chunk_manager.hpp"
#include "support/layer_fixtures.hpp"
#include "proc_memory.hpp"

namespace metaspace {
namespace {

constexpr size_t kRoot = 4 * MiB;
constexpr size_t kRoots = 16;
constexpr size_t kTouched = kRoots * kRoot;

struct RssFigures {
  size_t before, touched, returned, purged;
  static size_t drop(size_t from, size_t to) { return from > to ? from - to : 0; }
  size_t dropped_on_return() const { return drop(touched, returned); }
  size_t dropped() const { return drop(touched, purged); }
};

RssFigures run(ms_reclaim_t reclaim) {
  test::SpaceConfig config;
  config.reclaim = reclaim;
  config.expandable = false;
  config.node_bytes = kTouched;
  config.granule_bytes = ReclaimPolicy::of(reclaim).default_granule_bytes();
  test::Space space(config);
  RssFigures f{};
  f.before = proc_memory::resident_bytes();
  std::vector<Chunk*> chunks;
  for (size_t i = 0; i < kRoots; i++) {
    Chunk* c = space.chunks.get_chunk(0, 0, kRoot);
    EXPECT_NE(c, nullptr) << ms_last_error_text();
    if (c == nullptr) return f;
    std::memset(c->base, 0x5a, kRoot);
    chunks.push_back(c);
  }
  f.touched = proc_memory::resident_bytes();
  EXPECT_EQ(space.limiter.committed_bytes(), kTouched);
  for (Chunk* c : chunks) EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  f.returned = proc_memory::resident_bytes();
  space.chunks.purge();
  EXPECT_TRUE(space.consistent());
  f.purged = proc_memory::resident_bytes();
  EXPECT_EQ(space.vslist.nodes().size(), 1u) << "the fixed node stays mapped";
  return f;
}

void report(const char* policy, const RssFigures& f) {
  std::printf("[ rss ] %-10s RSS before %zu KiB, 64 MiB touched %zu KiB, returned %zu KiB, "
              "purged %zu KiB: dropped %zu KiB (%.0f%% of 64 MiB)\n",
              policy, f.before / KiB, f.touched / KiB, f.returned / KiB, f.purged / KiB,
              f.dropped() / KiB,
              100.0 * static_cast<double>(f.dropped()) / static_cast<double>(kTouched));
  ::testing::Test::RecordProperty("rss_touched_kib", std::to_string(f.touched / KiB));
  ::testing::Test::RecordProperty("rss_returned_kib", std::to_string(f.returned / KiB));
  ::testing::Test::RecordProperty("rss_purged_kib", std::to_string(f.purged / KiB));
}

TEST(ChunkManagerRss, BalancedGivesTouchedMemoryBackAfterPurge) {
  RssFigures f = run(MS_RECLAIM_BALANCED);
  report("balanced", f);
  EXPECT_GE(f.touched, f.before + kTouched * 9 / 10) << "touching must have made it resident";
  EXPECT_LT(f.dropped_on_return(), kTouched * 2 / 10) << "balanced uncommits in purge only";
  EXPECT_GE(f.dropped(), kTouched * 8 / 10);
}

TEST(ChunkManagerRss, AggressiveGivesTouchedMemoryBack) {
  RssFigures f = run(MS_RECLAIM_AGGRESSIVE);
  report("aggressive", f);
  EXPECT_GE(f.dropped_on_return(), kTouched * 8 / 10) << "at once, without a purge";
}

TEST(ChunkManagerRss, NoneKeepsTouchedMemory) {
  RssFigures f = run(MS_RECLAIM_NONE);
  report("none", f);
  EXPECT_GE(f.touched, f.before + kTouched * 9 / 10);
  EXPECT_LT(f.dropped(), kTouched * 2 / 10);
}

}  // namespace
}  // namespace metaspace
