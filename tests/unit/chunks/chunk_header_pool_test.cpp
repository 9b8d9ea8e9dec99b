// Chunk headers come from the bookkeeping slabs; reserved ones wait in the pool, released ones go
// back to the slabs.
#include "chunks/chunk_header_pool.hpp"

#include <gtest/gtest.h>

#include "os/fault_injection.hpp"
#include <metaspace/metaspace.h>

#include <set>
#include <vector>

namespace metaspace {
namespace {

TEST(ChunkHeaderPool, HandsOutReleasedSlotsFreshlyReset) {
  ChunkHeaderPool pool;
  EXPECT_TRUE(pool.verify());
  Chunk* a = pool.allocate();
  Chunk* b = pool.allocate();
  EXPECT_EQ(pool.in_use(), 2u);
  a->bytes = 4096;
  a->level = 3;
  a->state = Chunk::State::kFree;
  pool.release(a);
  EXPECT_EQ(pool.in_use(), 1u);
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
  Chunk* c = pool.allocate();
  EXPECT_EQ(c, a) << "the slabs hand the freed slot out first; allocate() must clear it";
  EXPECT_EQ(c->bytes, 0u);
  EXPECT_EQ(c->level, 0);
  EXPECT_EQ(c->state, Chunk::State::kUnused);
  EXPECT_EQ(c->next, nullptr);
  EXPECT_NE(b, c);
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, ReturnsReleasedHeadersToTheSlabsSoTheirPagesEmpty) {
  SlabAllocator slabs({.reserve_bytes = 64 << 20, .return_at_once = false});
  ChunkHeaderPool pool(slabs);
  std::vector<Chunk*> headers;
  for (int i = 0; i < 600; i++) headers.push_back(pool.allocate());
  EXPECT_EQ(std::set<Chunk*>(headers.begin(), headers.end()).size(), 600u);
  EXPECT_EQ(pool.in_use(), 600u);
  EXPECT_EQ(slabs.live_allocations(), 600u);
  size_t committed = slabs.committed_bytes();
  EXPECT_GE(committed, 600 * sizeof(Chunk));
  for (Chunk* c : headers) pool.release(c);
  EXPECT_EQ(pool.in_use(), 0u);
  EXPECT_EQ(pool.pooled(), 0u);
  EXPECT_EQ(slabs.live_allocations(), 0u) << "no released header is kept: it would hold its page";
  EXPECT_GT(slabs.purge(), 0u);
  EXPECT_EQ(slabs.committed_bytes(), 0u) << "every slab page emptied";
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, ReservedHeadersStayPooledUntilUsed) {
  SlabAllocator slabs({.reserve_bytes = 64 << 20, .return_at_once = false});
  ChunkHeaderPool pool(slabs);
  ASSERT_TRUE(pool.reserve(14));
  EXPECT_EQ(pool.pooled(), 14u);
  Chunk* a = pool.allocate();
  Chunk* b = pool.allocate();
  EXPECT_EQ(pool.pooled(), 12u);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.pooled(), 12u) << "a release does not refill the pool";
  EXPECT_EQ(slabs.live_allocations(), 12u);
  ASSERT_TRUE(pool.reserve(14));
  EXPECT_EQ(pool.pooled(), 14u);
  ASSERT_TRUE(pool.reserve(3));
  EXPECT_EQ(pool.pooled(), 14u) << "a smaller reserve keeps what is pooled";
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, ReservedHeadersSurviveABookkeepingFailure) {
  SlabAllocator slabs({.reserve_bytes = 64 << 20, .return_at_once = false});
  ChunkHeaderPool pool(slabs);
  ASSERT_TRUE(pool.reserve(17));
  os::inject_fault(os::FaultPoint::kBookkeeping, 1);
  for (int i = 0; i < 17; i++) EXPECT_NE(pool.allocate(), nullptr) << "reserved, must not fail";
  EXPECT_EQ(pool.allocate(), nullptr) << "the 18th needs the slabs, which refuse";
  EXPECT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY);
  os::inject_fault(os::FaultPoint::kBookkeeping, 0);
  EXPECT_EQ(pool.in_use(), 17u);
  EXPECT_NE(pool.allocate(), nullptr);
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, VerifyCatchesAPooledHeaderStillInUse) {
  ChunkHeaderPool pool;
  Chunk* c = pool.allocate();
  pool.release(c);
  ASSERT_TRUE(pool.reserve(1));  // the slabs hand c's slot out again: c now names a pooled header
  c->state = Chunk::State::kInUse;  // a stale pointer written after the release
  EXPECT_FALSE(pool.verify());
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
}

}  // namespace
}  // namespace metaspace
