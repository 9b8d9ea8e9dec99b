// Bad input and failures in the middle of chunk manager operations: each gives a clear error,
// leaves the manager consistent (verify, limiter == committed) and gives back what it took.
#include <gtest/gtest.h>

#include <cstring>

#include "chunks/chunk_manager.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

using test::FaultGuard;
using test::Space;
using test::SpaceConfig;

bool error_mentions(const char* words) {
  return std::strstr(ms_last_error_text(), words) != nullptr;
}

TEST(ChunkManagerErrors, OutOfRangeLevelsAreInvalid) {
  Space space{SpaceConfig{}};
  struct Request {
    int preferred, max;
    size_t min_committed;
  };
  for (Request r : {Request{-1, 0, 0}, Request{13, 13, 0}, Request{0, 13, 0}, Request{5, 3, 0},
                    Request{3, 3, 512 * KiB + 1}}) {
    EXPECT_EQ(space.chunks.get_chunk(r.preferred, r.max, r.min_committed), nullptr)
        << r.preferred << ".." << r.max;
    EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.root_chunks_carved(), 0u) << "nothing was taken";
}

// A chunk smaller than a granule shares the granule with its neighbours: it cannot be held
// uncommitted on its own, and a bad level is refused as for get_chunk.
TEST(ChunkManagerErrors, UncommittedChunkBelowAGranuleIsInvalid) {
  Space space{SpaceConfig{}};
  const int granule_level = space.chunks.geometry().level_fitting(space.chunks.granule_bytes());
  for (int level : {-1, granule_level + 1, 13}) {
    EXPECT_EQ(space.chunks.get_uncommitted_chunk(level), nullptr) << level;
    EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.root_chunks_carved(), 0u) << "nothing was taken";
}

// The free chunk found for an uncommitted request still holds a committed granule and the kernel
// refuses to take it back: the chunk is refused and returned, still counted as committed.
TEST(ChunkManagerErrors, UncommitFailureInGetUncommittedChunkReturnsTheChunk) {
  Space space{SpaceConfig{}};
  const size_t granule = space.chunks.granule_bytes();
  const int granule_level = space.chunks.geometry().level_fitting(granule);
  Chunk* a = space.chunks.get_chunk(granule_level, granule_level, granule);
  ASSERT_NE(a, nullptr) << ms_last_error_text();
  ASSERT_EQ(space.chunks.return_chunk(a), MS_OK);
  {
    FaultGuard fault(os::FaultPoint::kUncommit, 1);
    EXPECT_EQ(space.chunks.get_uncommitted_chunk(granule_level), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks_in_use(), 0u);
  EXPECT_EQ(space.free_chunks(0), 1u) << "merged back into its root";
  EXPECT_EQ(space.limiter.committed_bytes(), granule) << "the refused granule is still counted";
  Chunk* c = space.chunks.get_uncommitted_chunk(granule_level);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_EQ(space.limiter.committed_bytes(), 0u) << "the next attempt gives it back";
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(space.consistent());
}

// The first commit in a fresh root chunk area fails: the chunk, already split off the root,
// goes back and merges, and nothing stays charged.
TEST(ChunkManagerErrors, CommitFailureInGetChunkReturnsTheChunk) {
  Space space{SpaceConfig{}};
  {
    FaultGuard fault(os::FaultPoint::kCommit, 1);
    EXPECT_EQ(space.chunks.get_chunk(3, 3, 64 * KiB), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks_in_use(), 0u);
  EXPECT_EQ(space.free_chunks(), 1u);
  EXPECT_EQ(space.free_chunks(0), 1u);
  EXPECT_EQ(space.limiter.committed_bytes(), 0u);
  Chunk* c = space.chunks.get_chunk(3, 3, 64 * KiB);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  std::memset(c->base, 1, 64 * KiB);
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
}

// A root whose granules 256 KiB..512 KiB are committed (left by a returned chunk); asking for it
// fully committed takes two commit runs, [0, 256 KiB) and [512 KiB, 4 MiB).
Chunk* prepare_root_with_committed_hole(Space& space) {
  Chunk* a = space.chunks.get_chunk(4, 4, 0);
  Chunk* b = space.chunks.get_chunk(4, 4, 256 * KiB);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(b->base, a->base + 256 * KiB);
  EXPECT_EQ(space.chunks.return_chunk(a), MS_OK);
  EXPECT_EQ(space.chunks.return_chunk(b), MS_OK);
  EXPECT_EQ(space.free_chunks(0), 1u);
  EXPECT_EQ(space.vslist.committed_bytes(), 256 * KiB);
  return a;  // the root's header: a was the leader
}

// Checked mode commits run by run, so the second run can be made to fail on its own.
TEST(ChunkManagerErrors, CommitFailureInTheSecondRunKeepsTheFirst) {
  SpaceConfig config;
  config.protect_uncommitted = true;
  Space space{config};
  prepare_root_with_committed_hole(space);
  {
    FaultGuard fault(os::FaultPoint::kCommit, 2);
    EXPECT_EQ(space.chunks.get_chunk(0, 0, 4 * MiB), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks_in_use(), 0u);
  EXPECT_EQ(space.free_chunks(0), 1u);
  EXPECT_EQ(space.vslist.committed_bytes(), 512 * KiB) << "the first run stays committed";
  space.chunks.purge();
  EXPECT_EQ(space.limiter.committed_bytes(), 0u);
}

TEST(ChunkManagerErrors, CapReachedInTheSecondRunKeepsTheFirst) {
  SpaceConfig config;
  config.cap_bytes = 600 * KiB;
  Space space{config};
  prepare_root_with_committed_hole(space);
  EXPECT_EQ(space.chunks.get_chunk(0, 0, 4 * MiB), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.free_chunks(0), 1u);
  EXPECT_EQ(space.limiter.committed_bytes(), 512 * KiB);
  EXPECT_LE(space.limiter.committed_bytes(), space.limiter.cap_bytes());
}

// A chunk in use that grows into the cap keeps what it got and stays usable.
TEST(ChunkManagerErrors, CapReachedWhileGrowingAChunkInUse) {
  SpaceConfig config;
  config.cap_bytes = 256 * KiB;
  Space space{config};
  Chunk* c = space.chunks.get_chunk(2, 2, 128 * KiB);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_EQ(space.chunks.ensure_committed(c, MiB), MS_ERR_LIMIT);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(c->state, Chunk::State::kInUse);
  EXPECT_EQ(c->committed_bytes, 128 * KiB);
  std::memset(c->base, 1, c->committed_bytes);
  EXPECT_EQ(space.chunks.ensure_committed(c, 256 * KiB), MS_OK) << "up to the cap is fine";
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(space.consistent());
}

TEST(ChunkManagerErrors, FullClassSpaceIsReported) {
  SpaceConfig config;
  config.expandable = false;
  config.node_bytes = 4 * MiB;
  Space space{config};
  Chunk* c = space.chunks.get_chunk(0, 0, 0);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(space.chunks.get_chunk(1, 1, 0), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_CLASS_SPACE_FULL);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
}

TEST(ChunkManagerErrors, ReserveFailureIsReported) {
  Space space{SpaceConfig{}};
  FaultGuard fault(os::FaultPoint::kReserve, 1);
  EXPECT_EQ(space.chunks.get_chunk(0, 0, 0), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
  EXPECT_TRUE(space.consistent());
}

// The headers a split needs are reserved after the free chunk to split is found, and only that
// many: when the bookkeeping refuses them, the chunk goes back to its free list unchanged.
TEST(ChunkManagerErrors, RefusedHeadersLeaveTheFreeChunkToSplitInItsList) {
  Space space{SpaceConfig{}};
  Chunk* a = space.chunks.get_chunk(3, 3, 0);
  ASSERT_NE(a, nullptr) << ms_last_error_text();
  ASSERT_EQ(space.chunks.return_chunk(a), MS_OK);
  ASSERT_EQ(space.free_chunks(0), 1u) << "merged back into its root";
  const size_t headers = space.bookkeeping.live_allocations();
  {
    FaultGuard fault(os::FaultPoint::kBookkeeping, 1);
    EXPECT_EQ(space.chunks.get_chunk(5, 5, 0), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks_in_use(), 0u);
  EXPECT_EQ(space.free_chunks(), 1u);
  EXPECT_EQ(space.free_chunks(0), 1u) << "the root is back in its list, not split";
  EXPECT_EQ(space.bookkeeping.live_allocations(), headers) << "no header kept";
  EXPECT_EQ(space.root_chunks_carved(), 1u);
  Chunk* c = space.chunks.get_chunk(5, 5, 0);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_EQ(c->base, a->base) << "the same root, split now";
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(space.consistent());
}

// No free chunk: the headers of a new root chunk and its split are reserved before the root is
// carved, so a refusal carves nothing.
TEST(ChunkManagerErrors, RefusedHeadersCarveNoRootChunk) {
  Space space{SpaceConfig{}};
  {
    FaultGuard fault(os::FaultPoint::kBookkeeping, 3);
    EXPECT_EQ(space.chunks.get_chunk(4, 4, 0), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY);
  }
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.root_chunks_carved(), 0u);
  EXPECT_EQ(space.chunks_in_use() + space.free_chunks(), 0u);
  Chunk* c = space.chunks.get_chunk(4, 4, 0);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(space.consistent());
}

TEST(ChunkManagerErrors, ReturningAnUnmergedChunkTwiceIsRefused) {
  SpaceConfig config;
  config.reclaim = MS_RECLAIM_NONE;
  Space space{config};
  Chunk* c = space.chunks.get_chunk(4, 4, 0);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(space.chunks.return_chunk(c), MS_OK);
  size_t free_before = space.free_chunks();
  EXPECT_EQ(space.chunks.return_chunk(c), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("chunk returned twice")) << ms_last_error_text();
  EXPECT_EQ(space.free_chunks(), free_before);
  EXPECT_TRUE(space.consistent());
}

TEST(ChunkManagerErrors, ReturningAMergedLeaderTwiceIsRefused) {
  Space space{SpaceConfig{}};
  Chunk* c = space.chunks.get_chunk(4, 4, 0);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(space.chunks.return_chunk(c), MS_OK);
  ASSERT_EQ(c->level, 0) << "the leader's header now stands for the whole root";
  EXPECT_EQ(space.chunks.return_chunk(c), MS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("chunk returned twice")) << ms_last_error_text();
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.free_chunks(), 1u);
}

TEST(ChunkManagerErrors, ReturningAMergedFollowerTwiceIsRefused) {
  Space space{SpaceConfig{}};
  Chunk* a = space.chunks.get_chunk(4, 4, 0);
  Chunk* b = space.chunks.get_chunk(4, 4, 0);
  ASSERT_EQ(space.chunks.return_chunk(a), MS_OK);
  ASSERT_EQ(space.chunks.return_chunk(b), MS_OK);  // b's header goes back to the slabs
  EXPECT_EQ(space.chunks.return_chunk(b), MS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(error_mentions("no longer a chunk")) << ms_last_error_text();
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.free_chunks(), 1u);
}

TEST(ChunkManagerErrors, ReturnChunksRefusesTheWholeListForOneBadChunk) {
  Space space{SpaceConfig{}};
  Chunk* x = space.chunks.get_chunk(6, 6, 0);
  Chunk* y = space.chunks.get_chunk(6, 6, 0);
  Chunk* z = space.chunks.get_chunk(6, 6, 0);
  ASSERT_EQ(space.chunks.return_chunk(y), MS_OK);
  // An arena's list x -> y where y was returned behind its back (y's own links belong to a
  // free list now and must not be followed).
  x->next = y;
  EXPECT_EQ(space.chunks.return_chunks(x), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(x->state, Chunk::State::kInUse) << "all or nothing";
  EXPECT_TRUE(space.consistent());
  x->next = z;
  EXPECT_EQ(space.chunks.return_chunks(x), MS_OK);
  EXPECT_EQ(space.chunks_in_use(), 0u);
  EXPECT_EQ(space.free_chunks(0), 1u);
  EXPECT_TRUE(space.consistent());
}

TEST(ChunkManagerErrors, ReturningNullIsInvalid) {
  Space space{SpaceConfig{}};
  EXPECT_EQ(space.chunks.return_chunk(nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(space.chunks.return_chunks(nullptr), MS_OK) << "an empty list is nothing to return";
}

}  // namespace
}  // namespace metaspace
