// Commits while threads contend for the chunk manager's lock: the commit that found the lock
// taken makes the manager's next commits in chunks of 64 KiB and more step ahead
// (ChunkManager::kContendedStepBytes); without contention, and in smaller chunks, a chunk grows
// one granule at a time; a step ahead that the cap refuses never turns a request that fits into
// a failure.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "chunks/chunk_manager.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

using test::Space;
using test::SpaceConfig;

// The scheduler state of thread `tid` of this process ('R' running, 'S' sleeping...).
char thread_state(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  // The command name is in parentheses and may hold spaces: the state follows the last ')'.
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
}

// Calls ensure_committed(c, bytes) while another thread holds the manager's lock, and lets the
// lock go only once this thread sleeps waiting for it: the call has found the lock taken.
ms_error_t ensure_committed_against_a_holder(Space& space, Chunk* c, size_t bytes) {
  const pid_t caller = gettid();
  std::atomic<bool> held{false};
  std::thread holder([&] {
    std::lock_guard<std::mutex> guard(space.chunks.lock());
    held.store(true);
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (thread_state(caller) != 'S' && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  while (!held.load()) std::this_thread::yield();
  ms_error_t err = space.chunks.ensure_committed(c, bytes);
  holder.join();
  return err;
}

Chunk* chunk_of(Space& space, size_t bytes, size_t committed) {
  const int level = space.chunks.geometry().level_fitting(bytes);
  return space.chunks.get_chunk(level, level, committed);
}

TEST(ChunkManagerContention, UncontendedCommitsGrowAGranuleAtATime) {
  Space space{SpaceConfig{.granule_bytes = 4 * KiB}};
  Chunk* c = chunk_of(space, 256 * KiB, 4 * KiB);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  for (size_t want = 5 * KiB; want <= 64 * KiB; want += 4 * KiB) {
    ASSERT_EQ(space.chunks.ensure_committed(c, want), MS_OK) << ms_last_error_text();
    EXPECT_EQ(c->committed_bytes, (want + 4 * KiB - 1) / (4 * KiB) * (4 * KiB)) << want;
    EXPECT_TRUE(space.consistent());
  }
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
}

TEST(ChunkManagerContention, AContendedCommitStepsAheadAndSoDoTheNextOnes) {
  Space space{SpaceConfig{.granule_bytes = 4 * KiB}};
  Chunk* c = chunk_of(space, 256 * KiB, 4 * KiB);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  ASSERT_EQ(space.chunks.ensure_committed(c, 8 * KiB), MS_OK);
  EXPECT_EQ(c->committed_bytes, 8 * KiB) << "no contention yet: one granule";

  ASSERT_EQ(ensure_committed_against_a_holder(space, c, 12 * KiB), MS_OK) << ms_last_error_text();
  EXPECT_EQ(c->committed_bytes, 24 * KiB) << "16 KiB ahead of what was committed";
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.limiter.committed_bytes(), 24 * KiB);

  // Within what is committed: nothing to do.
  ASSERT_EQ(space.chunks.ensure_committed(c, 20 * KiB), MS_OK);
  EXPECT_EQ(c->committed_bytes, 24 * KiB);
  // The next commit steps ahead too, although it met no one.
  ASSERT_EQ(space.chunks.ensure_committed(c, 28 * KiB), MS_OK);
  EXPECT_EQ(c->committed_bytes, 40 * KiB);
  EXPECT_TRUE(space.consistent());

  // A request beyond the step is committed as asked; a step never goes past the chunk.
  ASSERT_EQ(space.chunks.ensure_committed(c, 250 * KiB), MS_OK);
  EXPECT_EQ(c->committed_bytes, 252 * KiB);
  ASSERT_EQ(space.chunks.ensure_committed(c, 253 * KiB), MS_OK);
  EXPECT_EQ(c->committed_bytes, 256 * KiB);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(space.consistent());
}

TEST(ChunkManagerContention, SmallChunksNeverStepAhead) {
  Space space{SpaceConfig{.granule_bytes = 4 * KiB}};
  Chunk* big = chunk_of(space, 256 * KiB, 4 * KiB);
  Chunk* small = chunk_of(space, 32 * KiB, 4 * KiB);
  ASSERT_NE(big, nullptr) << ms_last_error_text();
  ASSERT_NE(small, nullptr) << ms_last_error_text();
  ASSERT_EQ(ensure_committed_against_a_holder(space, small, 8 * KiB), MS_OK);
  EXPECT_EQ(small->committed_bytes, 8 * KiB) << "below 64 KiB: as asked, even when contended";
  ASSERT_EQ(space.chunks.ensure_committed(big, 8 * KiB), MS_OK);
  EXPECT_EQ(big->committed_bytes, 20 * KiB) << "the contention was noted all the same";
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks.return_chunk(small), MS_OK);
  EXPECT_EQ(space.chunks.return_chunk(big), MS_OK);
}

TEST(ChunkManagerContention, AStepAheadTheCapRefusesFallsBackToTheRequest) {
  Space space{SpaceConfig{.granule_bytes = 4 * KiB, .cap_bytes = 12 * KiB}};
  Chunk* c = chunk_of(space, 256 * KiB, 4 * KiB);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  ASSERT_EQ(ensure_committed_against_a_holder(space, c, 8 * KiB), MS_OK) << ms_last_error_text();
  EXPECT_EQ(c->committed_bytes, 8 * KiB) << "20 KiB would pass the cap: only what was asked";
  ASSERT_EQ(space.chunks.ensure_committed(c, 12 * KiB), MS_OK) << ms_last_error_text();
  EXPECT_EQ(c->committed_bytes, 12 * KiB) << "up to the cap exactly";
  EXPECT_EQ(space.chunks.ensure_committed(c, 16 * KiB), MS_ERR_LIMIT) << "past the cap";
  EXPECT_EQ(c->committed_bytes, 12 * KiB);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks.return_chunk(c), MS_OK);
}

}  // namespace
}  // namespace metaspace
