// Chunk::verify: what a chunk header alone tells, on chunks a real chunk manager hands out and
// takes back, and each broken field found.
#include <gtest/gtest.h>

#include <mutex>
#include <string>

#include "chunks/chunk.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

using test::Space;
using test::SpaceConfig;

class ChunkVerifyTest : public ::testing::Test {
 protected:
  ChunkVerifyTest() : space_(SpaceConfig{}) {}
  void SetUp() override {
    // Level 3 of a 4 MiB root: the split leaves free neighbours at levels 1..3 above it.
    chunk_ = space_.chunks.get_chunk(3, 3, 16 * KiB);
    ASSERT_NE(chunk_, nullptr) << ms_last_error_text();
  }
  void TearDown() override {
    if (chunk_ != nullptr) EXPECT_EQ(space_.chunks.return_chunk(chunk_), MS_OK);
    EXPECT_TRUE(space_.consistent());
  }
  // verify() under the manager's lock; on failure, the reason must name `words`.
  ::testing::AssertionResult verified(const Chunk* c) {
    std::lock_guard<std::mutex> guard(space_.chunks.lock());
    if (c->verify()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << ms_last_error_text();
  }
  void expect_broken(const char* words) {
    std::lock_guard<std::mutex> guard(space_.chunks.lock());
    EXPECT_FALSE(chunk_->verify());
    EXPECT_NE(std::string(ms_last_error_text()).find(words), std::string::npos)
        << ms_last_error_text();
  }

  Space space_;
  Chunk* chunk_ = nullptr;
};

TEST_F(ChunkVerifyTest, HandedOutAndFreeChunksPass) {
  EXPECT_TRUE(verified(chunk_));
  EXPECT_EQ(chunk_->state, Chunk::State::kInUse);
  const Chunk* neighbour = chunk_->next_in_area;
  ASSERT_NE(neighbour, nullptr);
  EXPECT_TRUE(neighbour->is_free());
  EXPECT_TRUE(verified(neighbour));
}

TEST_F(ChunkVerifyTest, CommittedOrUsedBeyondTheChunk) {
  uint32_t committed = chunk_->committed_bytes;
  chunk_->committed_bytes = chunk_->bytes + 1;
  expect_broken("committed");
  chunk_->committed_bytes = committed;
  chunk_->used_bytes = chunk_->bytes + 8;
  expect_broken("used");
  chunk_->used_bytes = 0;
  EXPECT_TRUE(verified(chunk_));
}

TEST_F(ChunkVerifyTest, ASizeThatIsNoLevelsSize) {
  uint32_t bytes = chunk_->bytes;
  chunk_->bytes = bytes - 1024;
  expect_broken("at level");
  chunk_->bytes = bytes;
  chunk_->level = 2;  // 512 KiB at level 2: a 2 MiB root
  EXPECT_TRUE(verified(chunk_)) << "the header alone cannot know the root size";
  chunk_->level = 3;
  EXPECT_TRUE(verified(chunk_));
}

TEST_F(ChunkVerifyTest, AMisalignedBase) {
  // The neighbours' links are checked too: moved alone, the base breaks alignment first.
  chunk_->base += 4 * KiB;
  expect_broken("not aligned");
  chunk_->base -= 4 * KiB;
  EXPECT_TRUE(verified(chunk_));
}

TEST_F(ChunkVerifyTest, AFreeChunkWithAnOwnerOrUsedBytes) {
  Chunk* neighbour = chunk_->next_in_area;
  ASSERT_TRUE(neighbour->is_free());
  std::lock_guard<std::mutex> guard(space_.chunks.lock());
  neighbour->set_owner(this);
  EXPECT_FALSE(neighbour->verify());
  neighbour->set_owner(nullptr);
  neighbour->used_bytes = 64;
  EXPECT_FALSE(neighbour->verify());
  neighbour->used_bytes = 0;
  EXPECT_TRUE(neighbour->verify()) << ms_last_error_text();
}

TEST_F(ChunkVerifyTest, AStateThatIsNoChunksState) {
  chunk_->state = Chunk::State::kUnused;
  expect_broken("state");
  chunk_->state = static_cast<Chunk::State>(7);
  expect_broken("state");
  chunk_->state = Chunk::State::kInUse;
  EXPECT_TRUE(verified(chunk_));
}

TEST_F(ChunkVerifyTest, ANeighbourThatDoesNotLinkBack) {
  Chunk* neighbour = chunk_->next_in_area;
  Chunk* beyond = neighbour->next_in_area;
  ASSERT_NE(beyond, nullptr);
  {
    std::lock_guard<std::mutex> guard(space_.chunks.lock());
    neighbour->prev_in_area = beyond;  // the neighbour above names another chunk below it
  }
  expect_broken("neighbour above");
  {
    std::lock_guard<std::mutex> guard(space_.chunks.lock());
    neighbour->prev_in_area = chunk_;
  }
  EXPECT_TRUE(verified(chunk_));
}

}  // namespace
}  // namespace metaspace
