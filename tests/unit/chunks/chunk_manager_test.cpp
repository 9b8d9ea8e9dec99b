// The chunk manager: where get_chunk finds chunks, how returned chunks merge, and what each reclaim
// policy does with free memory. Offsets below are from the root chunk area's base; the comments
// draw the area as [chunk:level] from low to high addresses.
#include "chunks/chunk_manager.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

using test::Space;
using test::SpaceConfig;

constexpr size_t kGranule = 16 * KiB;

SpaceConfig config(ms_reclaim_t reclaim) {
  SpaceConfig c;
  c.reclaim = reclaim;
  c.granule_bytes = kGranule;
  return c;
}

class ChunkManagerTest : public ::testing::Test {
 protected:
  explicit ChunkManagerTest(ms_reclaim_t reclaim = MS_RECLAIM_BALANCED) : space_(config(reclaim)) {}

  Chunk* get(int level, int max_level = -1, size_t min_committed = 0) {
    Chunk* c = space_.chunks.get_chunk(level, max_level < 0 ? level : max_level, min_committed);
    EXPECT_NE(c, nullptr) << ms_last_error_text();
    EXPECT_TRUE(space_.consistent());
    if (c != nullptr && area_ == nullptr) area_ = align_down(c->base, 4 * MiB);
    return c;
  }
  void commit(Chunk* c) {
    ASSERT_EQ(space_.chunks.ensure_committed(c, c->bytes), MS_OK) << ms_last_error_text();
    EXPECT_TRUE(space_.consistent());
  }
  void give_back(Chunk* c) {
    ASSERT_EQ(space_.chunks.return_chunk(c), MS_OK) << ms_last_error_text();
    EXPECT_TRUE(space_.consistent());
  }
  size_t offset(const Chunk* c) const { return static_cast<size_t>(c->base - area_); }

  Space space_;
  char* area_ = nullptr;  // the first root chunk area handed out
};

TEST_F(ChunkManagerTest, FirstChunkCarvesARootAndSplitsIt) {
  Chunk* c = get(3, 3, 100);
  EXPECT_EQ(c->level, 3);
  EXPECT_EQ(c->bytes, 512 * KiB);
  EXPECT_EQ(c->state, Chunk::State::kInUse);
  EXPECT_EQ(offset(c), 0u);
  EXPECT_EQ(c->committed_bytes, kGranule) << "min_committed rounded up to one granule";
  EXPECT_EQ(space_.root_chunks_carved(), 1u);
  // [c:3][3][2][1]: the splinters are free.
  EXPECT_EQ(space_.free_chunks(3), 1u);
  EXPECT_EQ(space_.free_chunks(2), 1u);
  EXPECT_EQ(space_.free_chunks(1), 1u);
  EXPECT_EQ(space_.chunks_in_use(), 1u);
  std::memset(c->base, 0x42, c->committed_bytes);
}

// Every header the space holds belongs to a chunk: a take reserves the headers its split needs and
// no spares (14 spares per space, one for each level, once kept a slab page).
TEST_F(ChunkManagerTest, NoSpareHeadersAreKept) {
  auto headers_match_chunks = [&] {
    return space_.bookkeeping.live_allocations() ==
           space_.chunks_in_use() + space_.free_chunks();
  };
  std::vector<Chunk*> taken;
  for (int level : {3, 12, 7, 12, 0, 9, 5}) {
    taken.push_back(get(level));
    EXPECT_TRUE(headers_match_chunks()) << "after a chunk of level " << level << ": "
                                        << space_.bookkeeping.live_allocations() << " headers";
  }
  for (Chunk* c : taken) {
    give_back(c);
    EXPECT_TRUE(headers_match_chunks());
  }
}

TEST_F(ChunkManagerTest, UncommittedChunksAreTakenAtTheLevelBeforeSplittingLarger) {
  Chunk* a = get(4);          // [a:4][4][3][2][1], nothing committed
  Chunk* b = get(2);          // the level-2 splinter as it is, not a split of level 1
  EXPECT_EQ(offset(b), MiB);
  EXPECT_EQ(space_.free_chunks(1), 1u);
  Chunk* c = get(3, 5);       // level 3 exists: no split
  EXPECT_EQ(offset(c), 512 * KiB);
  Chunk* d = get(5, 6);       // preferred level 5..6 empty: the level-4 splinter is split
  EXPECT_EQ(offset(d), 256 * KiB);
  EXPECT_EQ(d->level, 5);
  for (Chunk* x : {a, b, c, d}) give_back(x);
}

TEST_F(ChunkManagerTest, FallsBackToANewRootChunk) {
  Chunk* a = get(0);
  Chunk* b = get(0);
  EXPECT_NE(a->base, b->base);
  EXPECT_EQ(space_.root_chunks_carved(), 2u);
  give_back(a);
  give_back(b);
  Chunk* c = get(0);
  EXPECT_EQ(space_.root_chunks_carved(), 2u) << "a free root is reused";
  give_back(c);
}

// Setup: [a:2 committed, free][b:4 in use][c:4 committed, free][3 free][1 free].
// get_chunk(3, 5): the committed level-4 chunk c, one level smaller, wins over the uncommitted
// chunk at exactly level 3 and over the committed larger chunk a.
TEST_F(ChunkManagerTest, CommittedChunkNearTheLevelIsPreferred) {
  Chunk* a = get(2);
  Chunk* b = get(4);
  Chunk* c = get(4);
  ASSERT_EQ(offset(b), MiB);
  ASSERT_EQ(offset(c), MiB + 256 * KiB);
  commit(a);
  commit(c);
  give_back(a);
  give_back(c);
  ASSERT_EQ(space_.free_chunks(3), 1u);
  Chunk* got = get(3, 5, 1);
  EXPECT_EQ(got, c);
  EXPECT_EQ(got->level, 4);
  EXPECT_TRUE(got->fully_committed());
  give_back(got);
  give_back(b);
}

// The same choice when the caller needs nothing committed: an uncommitted chunk is not a
// committed one just because zero bytes suffice.
TEST_F(ChunkManagerTest, CommittedChunkIsPreferredEvenWhenNothingNeedsCommitting) {
  Chunk* a = get(2);
  Chunk* b = get(4);
  Chunk* c = get(4);
  commit(a);
  commit(c);
  give_back(a);
  give_back(c);
  Chunk* got = get(3, 5, 0);
  EXPECT_EQ(got, c) << "took the uncommitted level-3 chunk at offset " << offset(got);
  give_back(got);
  give_back(b);
}

// Setup: [a:2 committed, free][b:4 in use][c:4 free][3 free][1 free].
// get_chunk(3, 3): no committed chunk at level 3; the committed larger a is split rather than
// the uncommitted exact fit taken.
TEST_F(ChunkManagerTest, CommittedLargerChunkBeatsUncommittedExactFit) {
  Chunk* a = get(2);
  Chunk* b = get(4);
  Chunk* c = get(4);
  commit(a);
  give_back(a);
  give_back(c);
  Chunk* got = get(3, 3, 1);
  EXPECT_EQ(offset(got), 0u);
  EXPECT_TRUE(got->fully_committed());
  give_back(got);
  give_back(b);
}

// Setup: [a:2 committed, free][b:6 in use][c:6 committed, free][5][4][3][1], all others free
// and uncommitted. get_chunk(3, 6): levels 3..5 (near) have nothing committed; the big request
// takes the committed larger chunk, not the small loaders' committed splinter c at level 6.
TEST_F(ChunkManagerTest, BigRequestsLeaveFarSmallerSplintersAlone) {
  Chunk* a = get(2);
  Chunk* b = get(6);
  Chunk* c = get(6);
  ASSERT_EQ(offset(c), MiB + 64 * KiB);
  commit(a);
  commit(c);
  give_back(a);
  give_back(c);
  Chunk* got = get(3, 6, 1);
  EXPECT_EQ(offset(got), 0u);
  EXPECT_EQ(got->level, 3);
  EXPECT_EQ(space_.free_chunks(6), 1u) << "c is still free";
  give_back(got);
  give_back(b);
}

TEST_F(ChunkManagerTest, ReturnedChunksMergeBackIntoAWholeRoot) {
  std::vector<Chunk*> chunks;
  for (int level : {12, 1, 7, 3, 12, 9, 2, 5, 11, 4}) chunks.push_back(get(level));
  ASSERT_EQ(space_.root_chunks_carved(), 1u);
  // Return in an order that merges late: odd positions first, then the even ones backwards.
  for (size_t i = 1; i < chunks.size(); i += 2) give_back(chunks[i]);
  for (size_t i = chunks.size(); i >= 2; i -= 2) give_back(chunks[i - 2]);
  EXPECT_EQ(space_.chunks_in_use(), 0u);
  EXPECT_EQ(space_.free_chunks(), 1u);
  EXPECT_EQ(space_.free_chunks(0), 1u);
}

TEST_F(ChunkManagerTest, AttemptEnlargeGrowsInPlace) {
  Chunk* a = get(5);
  char* base = a->base;
  EXPECT_TRUE(space_.chunks.attempt_enlarge(a));
  EXPECT_EQ(a->level, 4);
  EXPECT_EQ(a->base, base);
  EXPECT_TRUE(space_.consistent());
  Chunk* b = get(4);  // takes a's new buddy
  EXPECT_FALSE(space_.chunks.attempt_enlarge(a));
  give_back(b);
  give_back(a);
  EXPECT_EQ(space_.free_chunks(0), 1u);
}

TEST_F(ChunkManagerTest, BalancedKeepsFreeMemoryCommittedUntilPurge) {
  Chunk* a = get(2, 2, MiB);
  std::memset(a->base, 1, MiB);
  give_back(a);
  EXPECT_EQ(space_.vslist.committed_bytes(), MiB) << "balanced uncommits in purge only";
  size_t uncommits = space_.vslist.uncommit_calls();
  space_.chunks.purge();
  EXPECT_TRUE(space_.consistent());
  EXPECT_GT(space_.vslist.uncommit_calls(), uncommits);
  EXPECT_EQ(space_.limiter.committed_bytes(), 0u);
  EXPECT_TRUE(space_.vslist.nodes().empty()) << "a node with only free, uncommitted roots goes";
}

// A free chunk smaller than a granule shares the granule with its neighbours; purge must not
// take the memory from under the chunk next to it that is still in use.
TEST_F(ChunkManagerTest, PurgeLeavesGranulesSharedWithChunksInUse) {
  Chunk* a = get(12, 12, KiB);  // 1 KiB chunks: sixteen to a granule
  Chunk* b = get(12, 12, KiB);
  ASSERT_EQ(b->base, a->base + KiB);
  std::memset(a->base, 0x61, KiB);
  give_back(b);
  space_.chunks.purge();
  EXPECT_TRUE(space_.consistent());
  EXPECT_EQ(space_.vslist.committed_bytes(), kGranule);
  EXPECT_EQ(a->base[KiB - 1], 0x61);
  give_back(a);
  space_.chunks.purge();
  EXPECT_EQ(space_.limiter.committed_bytes(), 0u);
}

// A chunk held with nothing committed (the class space's guard) may come from a free chunk whose
// granule is still committed under balanced: the granule goes back before it is handed out.
TEST_F(ChunkManagerTest, UncommittedChunkGivesBackWhatAFreeChunkHeld) {
  const int granule_level = space_.chunks.geometry().level_fitting(kGranule);
  Chunk* a = get(granule_level, granule_level, kGranule);
  give_back(a);  // merged back into the root, the granule stays committed until a purge
  ASSERT_EQ(space_.vslist.committed_bytes(), kGranule);
  Chunk* c = space_.chunks.get_uncommitted_chunk(granule_level);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_TRUE(space_.consistent());
  EXPECT_EQ(c->level, granule_level);
  EXPECT_EQ(c->state, Chunk::State::kInUse);
  EXPECT_EQ(c->committed_bytes, 0u);
  EXPECT_EQ(space_.chunks.read_committed_bytes(c), 0u);
  EXPECT_EQ(space_.vslist.committed_bytes(), 0u);
  EXPECT_EQ(space_.limiter.committed_bytes(), 0u);
  give_back(c);
}

class AggressiveChunkManagerTest : public ChunkManagerTest {
 protected:
  AggressiveChunkManagerTest() : ChunkManagerTest(MS_RECLAIM_AGGRESSIVE) {}
};

TEST_F(AggressiveChunkManagerTest, UncommitsOnReturn) {
  Chunk* keep = get(4, 4, 64 * KiB);
  Chunk* a = get(4, 4, 256 * KiB);
  size_t committed = space_.vslist.committed_bytes();
  give_back(a);
  EXPECT_EQ(space_.vslist.committed_bytes(), committed - 256 * KiB) << "without a purge";
  give_back(keep);
  EXPECT_EQ(space_.vslist.committed_bytes(), 0u);
  EXPECT_EQ(space_.limiter.committed_bytes(), 0u);
  EXPECT_EQ(space_.free_chunks(0), 1u);
}

TEST_F(AggressiveChunkManagerTest, SubGranuleChunksWaitForTheirBuddies) {
  Chunk* a = get(12, 12, KiB);
  Chunk* b = get(12, 12, KiB);
  give_back(a);  // merges nowhere: b is in use, and the granule is shared with it
  EXPECT_EQ(space_.vslist.committed_bytes(), kGranule);
  give_back(b);  // merges up to the root, which spans whole granules
  EXPECT_EQ(space_.vslist.committed_bytes(), 0u);
}

class NoReclaimChunkManagerTest : public ChunkManagerTest {
 protected:
  NoReclaimChunkManagerTest() : ChunkManagerTest(MS_RECLAIM_NONE) {}
};

TEST_F(NoReclaimChunkManagerTest, NeverMergesNorUncommits) {
  Chunk* a = get(4);
  EXPECT_TRUE(a->fully_committed()) << "pre-elastic: chunks are committed whole";
  Chunk* b = get(4);
  give_back(a);
  give_back(b);
  EXPECT_EQ(space_.free_chunks(4), 2u) << "buddies stay apart";
  EXPECT_EQ(space_.free_chunks(0), 0u);
  EXPECT_FALSE(space_.chunks.attempt_enlarge(get(4)));
  size_t committed = space_.vslist.committed_bytes();
  EXPECT_GE(committed, 512 * KiB);
  space_.chunks.purge();
  EXPECT_EQ(space_.vslist.committed_bytes(), committed);
  EXPECT_EQ(space_.vslist.uncommit_calls(), 0u);
  EXPECT_TRUE(space_.consistent());
}

// The pre-elastic policy commits every chunk it hands out, but not one asked for uncommitted.
TEST_F(NoReclaimChunkManagerTest, UncommittedChunkStaysUncommitted) {
  const int granule_level = space_.chunks.geometry().level_fitting(kGranule);
  Chunk* guard = space_.chunks.get_uncommitted_chunk(granule_level);
  ASSERT_NE(guard, nullptr) << ms_last_error_text();
  EXPECT_TRUE(space_.consistent());
  EXPECT_EQ(guard->committed_bytes, 0u);
  EXPECT_EQ(space_.chunks.read_committed_bytes(guard), 0u);
  EXPECT_EQ(space_.vslist.committed_bytes(), 0u);
  EXPECT_EQ(space_.vslist.commit_calls(), 0u) << "never committed, so nothing to give back";
  EXPECT_EQ(space_.vslist.uncommit_calls(), 0u);
  Chunk* next = get(granule_level);
  EXPECT_TRUE(next->fully_committed()) << "the policy still applies to get_chunk";
  EXPECT_EQ(space_.vslist.committed_bytes(), kGranule);
  give_back(next);
  give_back(guard);
}

}  // namespace
}  // namespace metaspace
