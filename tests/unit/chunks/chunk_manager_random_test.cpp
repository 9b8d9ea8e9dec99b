// Randomized chunk manager workout with fixed seeds: chunks of random levels, committed in random
// parts, returned in random order, with purges and in-place enlargements in between. After every
// step the manager verifies and the limiter agrees with the commit masks; every live chunk keeps
// a tag in its first and last committed words, so a chunk handed out twice, or memory uncommitted
// under a live chunk (madvise makes it read zeros; checked mode makes it fault), shows up as a
// changed tag. Runs with a cap check that refused commits leave everything consistent too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "chunks/chunk_manager.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

using test::Space;
using test::SpaceConfig;

struct Param {
  uint32_t seed;
  ms_reclaim_t reclaim;
  bool expandable;
  size_t root_chunk_bytes;
  size_t granule_bytes;
  bool protect_uncommitted;  // checked mode: a live chunk losing memory would fault, not read 0
  size_t cap_bytes;          // non-zero: commits fail with MS_ERR_LIMIT on the way
};

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
  const Param& p = info.param;
  return std::string(reclaim_name(p.reclaim)) + (p.expandable ? "_expandable" : "_fixed") +
         "_root" + std::to_string(p.root_chunk_bytes / MiB) + "M_granule" +
         std::to_string(p.granule_bytes / KiB) + "K" + (p.protect_uncommitted ? "_checked" : "") +
         (p.cap_bytes != 0 ? "_cap" + std::to_string(p.cap_bytes / MiB) + "M" : "") + "_seed" +
         std::to_string(p.seed);
}

struct Live {
  Chunk* chunk;
  uint64_t tag;
  size_t tail_offset;  // where the second copy of the tag is
  bool tagged;         // false while nothing of the chunk was committed
};

std::ostream& operator<<(std::ostream& out, const Param& p) {
  return out << reclaim_name(p.reclaim) << (p.expandable ? " expandable" : " fixed") << " root "
             << p.root_chunk_bytes / KiB << " KiB, granule " << p.granule_bytes / KiB
             << " KiB, protect " << p.protect_uncommitted << ", cap " << p.cap_bytes
             << ", seed " << p.seed;
}

class ChunkManagerRandomTest : public ::testing::TestWithParam<Param> {
 protected:
  static SpaceConfig config_of(const Param& p) {
    SpaceConfig c;
    c.reclaim = p.reclaim;
    c.root_chunk_bytes = p.root_chunk_bytes;
    c.granule_bytes = p.granule_bytes;
    // Fixed: one node large enough for the live set (a full space is accepted and checked too).
    c.node_bytes = p.expandable ? 4 * p.root_chunk_bytes : 64 * p.root_chunk_bytes;
    c.expandable = p.expandable;
    c.protect_uncommitted = p.protect_uncommitted;
    c.cap_bytes = p.cap_bytes;
    return c;
  }

  ChunkManagerRandomTest() : space_(config_of(GetParam())), rng_(GetParam().seed) {}

  size_t below(size_t n) { return n == 0 ? 0 : rng_() % n; }

  void tag(Live& l) {
    Chunk* c = l.chunk;
    l.tagged = c->committed_bytes >= sizeof l.tag;
    if (!l.tagged) return;
    std::memcpy(c->base, &l.tag, sizeof l.tag);
    l.tail_offset = align_down(c->committed_bytes - sizeof l.tag, sizeof l.tag);
    std::memcpy(c->base + l.tail_offset, &l.tag, sizeof l.tag);
  }

  ::testing::AssertionResult tag_intact(const Live& l) {
    if (!l.tagged) return ::testing::AssertionSuccess();
    uint64_t head, tail;
    std::memcpy(&head, l.chunk->base, sizeof head);
    std::memcpy(&tail, l.chunk->base + l.tail_offset, sizeof tail);
    if (head == l.tag && tail == l.tag) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "chunk " << static_cast<void*>(l.chunk->base)
                                         << " lost its tag: " << head << "/" << tail
                                         << " instead of " << l.tag;
  }

  void get_one() {
    const ChunkGeometry& g = space_.chunks.geometry();
    // Small chunks are the common case, as with real loaders; big ones are rarer.
    int preferred = below(4) == 0 ? static_cast<int>(below(g.levels()))
                                  : g.highest_level() - static_cast<int>(below(6));
    int max_level = std::min(g.highest_level(), preferred + static_cast<int>(below(3)));
    size_t min_committed = below(2) == 0 ? 0 : below(g.bytes(max_level) + 1);
    Chunk* c = space_.chunks.get_chunk(preferred, max_level, min_committed);
    if (c == nullptr) {
      // The only acceptable failures: a full fixed space, or the cap.
      bool full = !GetParam().expandable && ms_last_error() == MS_ERR_CLASS_SPACE_FULL;
      bool capped = GetParam().cap_bytes != 0 && ms_last_error() == MS_ERR_LIMIT;
      ASSERT_TRUE(full || capped) << ms_last_error_text();
      failures_++;
      return;
    }
    ASSERT_GE(c->level, preferred);
    ASSERT_LE(c->level, max_level);
    ASSERT_GE(c->committed_bytes, std::min(size_t{c->bytes}, min_committed));
    Live l{c, rng_() | 1, 0, false};
    tag(l);
    live_.push_back(l);
  }

  void return_one() {
    size_t i = below(live_.size());
    ASSERT_TRUE(tag_intact(live_[i]));
    ASSERT_EQ(space_.chunks.return_chunk(live_[i].chunk), MS_OK) << ms_last_error_text();
    live_[i] = live_.back();
    live_.pop_back();
  }

  void commit_some() {
    Live& l = live_[below(live_.size())];
    size_t bytes = below(l.chunk->bytes + 1);
    ms_error_t err = space_.chunks.ensure_committed(l.chunk, bytes);
    if (err == MS_ERR_LIMIT && GetParam().cap_bytes != 0) {
      ASSERT_LE(space_.limiter.committed_bytes(), GetParam().cap_bytes);
      failures_++;
    } else {
      ASSERT_EQ(err, MS_OK) << ms_last_error_text();
      ASSERT_GE(l.chunk->committed_bytes, std::min(size_t{l.chunk->bytes}, bytes));
    }
    ASSERT_TRUE(tag_intact(l));
    tag(l);
  }

  void enlarge_one() {
    Live& l = live_[below(live_.size())];
    size_t bytes = l.chunk->bytes;
    if (space_.chunks.attempt_enlarge(l.chunk)) ASSERT_EQ(l.chunk->bytes, 2 * bytes);
    ASSERT_TRUE(tag_intact(l));
  }

  void purge() {
    space_.chunks.purge();
    for (const Live& l : live_) ASSERT_TRUE(tag_intact(l));
  }

  Space space_;
  std::mt19937_64 rng_;
  std::vector<Live> live_;
  size_t failures_ = 0;  // refused requests (cap, full space)
};

TEST_P(ChunkManagerRandomTest, EverythingComesBackWholeAndFree) {
  constexpr int kSteps = 3000;
  for (int step = 0; step < kSteps; step++) {
    size_t dice = below(100);
    if (live_.empty() || (dice < 45 && live_.size() < 200)) {
      get_one();
    } else if (dice < 80) {
      return_one();
    } else if (dice < 95) {
      commit_some();
    } else if (dice < 98) {
      enlarge_one();
    } else {
      purge();
    }
    if (HasFatalFailure()) {
      ADD_FAILURE() << "at step " << step;
      return;
    }
    ASSERT_TRUE(space_.consistent()) << "after step " << step;
  }

  if (GetParam().cap_bytes != 0) EXPECT_GT(failures_, 0u) << "the cap was never reached";
  std::shuffle(live_.begin(), live_.end(), rng_);
  while (!live_.empty()) {
    ASSERT_NO_FATAL_FAILURE(return_one());
    ASSERT_TRUE(space_.consistent());
  }
  EXPECT_EQ(space_.chunks_in_use(), 0u);
  const Param& p = GetParam();
  if (p.reclaim == MS_RECLAIM_NONE) {
    // No merging: the free chunks tile the areas in pieces, and memory stays committed.
    space_.chunks.purge();
    EXPECT_GT(space_.limiter.committed_bytes(), 0u);
    EXPECT_TRUE(space_.consistent());
    return;
  }
  // Merging policies: every root chunk area is one free root chunk again.
  EXPECT_EQ(space_.free_chunks(0), space_.root_chunks_carved());
  EXPECT_EQ(space_.free_chunks(), space_.root_chunks_carved());
  if (p.reclaim == MS_RECLAIM_AGGRESSIVE) {
    EXPECT_EQ(space_.vslist.committed_bytes(), 0u) << "aggressive uncommits on return";
  }
  space_.chunks.purge();
  EXPECT_TRUE(space_.consistent());
  EXPECT_EQ(space_.vslist.committed_bytes(), 0u);
  EXPECT_EQ(space_.limiter.committed_bytes(), 0u);
  // An expandable space unmaps nodes whose roots are all free; the fixed one keeps its node.
  EXPECT_EQ(space_.vslist.nodes().size(), p.expandable ? 0u : 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, ChunkManagerRandomTest,
    ::testing::Values(Param{1, MS_RECLAIM_BALANCED, true, 4 * MiB, 16 * KiB, false, 0},
                      Param{2, MS_RECLAIM_BALANCED, true, 4 * MiB, 4 * KiB, false, 0},
                      Param{3, MS_RECLAIM_BALANCED, false, 4 * MiB, 64 * KiB, false, 0},
                      Param{4, MS_RECLAIM_BALANCED, true, 16 * MiB, 64 * KiB, false, 0},
                      Param{5, MS_RECLAIM_AGGRESSIVE, true, 4 * MiB, 4 * KiB, false, 0},
                      Param{6, MS_RECLAIM_AGGRESSIVE, false, 4 * MiB, 16 * KiB, false, 0},
                      Param{7, MS_RECLAIM_NONE, true, 4 * MiB, 64 * KiB, false, 0},
                      Param{8, MS_RECLAIM_BALANCED, true, 4 * MiB, 16 * KiB, true, 0},
                      Param{9, MS_RECLAIM_AGGRESSIVE, true, 4 * MiB, 4 * KiB, true, 0},
                      Param{10, MS_RECLAIM_BALANCED, true, 4 * MiB, 16 * KiB, false, 6 * MiB},
                      Param{11, MS_RECLAIM_AGGRESSIVE, false, 4 * MiB, 16 * KiB, true, 8 * MiB}),
    name_of);

}  // namespace
}  // namespace metaspace
