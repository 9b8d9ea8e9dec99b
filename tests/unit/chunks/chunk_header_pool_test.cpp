// Chunk headers come from slabs and are recycled, never freed one by one.
#include "chunks/chunk_header_pool.hpp"

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <set>
#include <vector>

namespace metaspace {
namespace {

TEST(ChunkHeaderPool, ReusesReleasedHeadersFreshlyReset) {
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
  EXPECT_EQ(c, a) << "the released header is reused first";
  EXPECT_EQ(c->bytes, 0u);
  EXPECT_EQ(c->level, 0);
  EXPECT_EQ(c->state, Chunk::State::kUnused);
  EXPECT_EQ(c->next, nullptr);
  EXPECT_NE(b, c);
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, GrowsBySlabsWithoutMovingHeaders) {
  ChunkHeaderPool pool;
  std::vector<Chunk*> headers;
  for (int i = 0; i < 600; i++) headers.push_back(pool.allocate());
  EXPECT_EQ(std::set<Chunk*>(headers.begin(), headers.end()).size(), 600u);
  EXPECT_EQ(pool.in_use(), 600u);
  size_t capacity = pool.capacity();
  EXPECT_GE(capacity, 600u);
  EXPECT_EQ(pool.footprint_bytes(), capacity * sizeof(Chunk));
  for (Chunk* c : headers) pool.release(c);
  EXPECT_EQ(pool.in_use(), 0u);
  for (int i = 0; i < 600; i++) pool.allocate();
  EXPECT_EQ(pool.capacity(), capacity) << "all 600 come from the recycled headers";
  EXPECT_TRUE(pool.verify()) << ms_last_error_text();
}

TEST(ChunkHeaderPool, VerifyCatchesAPooledHeaderStillInUse) {
  ChunkHeaderPool pool;
  Chunk* c = pool.allocate();
  pool.release(c);
  c->state = Chunk::State::kInUse;  // a stale pointer written after the release
  EXPECT_FALSE(pool.verify());
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
}

}  // namespace
}  // namespace metaspace
