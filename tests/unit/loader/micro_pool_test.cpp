// The micro pool (src/loader/micro_pool.*) through the public API, with the pool's own state
// checked from inside: shared chunks come back when their last loader dies, ownership is exact,
// the accounting identity holds after every step, checked mode fences micro blocks, loaders that
// outgrow the pool graduate to arenas, and the loaders' memory really leaves the process (RSS).
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "arena/fence.hpp"
#include "instance/metaspace.hpp"
#include "support/accounting.hpp"
#include "support/micro_loader_shape.hpp"
#include "support/ms_assertions.hpp"
#include "support/policy_settings.hpp"
#include "proc_memory.hpp"

namespace metaspace {
namespace {

Metaspace& impl(ms_metaspace_t* ms) { return *reinterpret_cast<Metaspace*>(ms); }

::testing::AssertionResult identity_holds(ms_metaspace_t* ms) {
  if (ms_verify(ms) != MS_OK) {
    return ::testing::AssertionFailure() << "ms_verify: " << ms_last_error_text();
  }
  ms_stats_t st;
  if (ms_get_stats(ms, &st) != MS_OK) return ::testing::AssertionFailure() << "no stats";
  const ms_space_stats_t* spaces[3] = {&st.space[0], &st.space[1], &st.total};
  for (const ms_space_stats_t* sp : spaces) {
    if (test::accounted_bytes(*sp) != sp->committed_bytes) {
      return ::testing::AssertionFailure()
             << "committed " << sp->committed_bytes << " != accounted "
             << test::accounted_bytes(*sp);
    }
  }
  return ::testing::AssertionSuccess();
}

struct MicroPoolTest : ::testing::Test {
  void SetUp() override { make({}); }
  void TearDown() override { ms_destroy(ms_); }
  void make(ms_settings_t s) {
    if (ms_ != nullptr) ms_destroy(ms_);
    if (s.size == 0) ms_settings_init(&s);
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
  }
  MicroPool& pool() { return impl(ms_).micro_pool(); }
  ms_loader_t* micro() {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
    EXPECT_NE(l, nullptr) << ms_last_error_text();
    return l;
  }
  static ms_loader_stats_t stats(ms_loader_t* l) { return test::loader_stats(l); }
  ms_metaspace_t* ms_ = nullptr;
};

TEST_F(MicroPoolTest, LoaderObjectIsSmall) {
  // It was 752 bytes with two arenas inline; the arenas now live apart, made only when needed.
#ifdef METASPACE_ASSERTS
  // Assert builds: the loader lock records its holder too (MS_ASSERT_LOCKED), 8 bytes more.
  EXPECT_LE(sizeof(LoaderMetaspace), 136u);
#else
  EXPECT_LE(sizeof(LoaderMetaspace), 128u);
#endif
  // A loader's arenas take a 320-byte slab slot, 12 to a page (the pooled figures live apart).
  EXPECT_LE(sizeof(LoaderArenas), 320u);
  EXPECT_LE(LoaderArenas::class_slot_bytes(), 320u);
}

TEST_F(MicroPoolTest, MicroLoadersShareAChunkThatGoesBackWithTheLastOfThem) {
  ms_loader_t* a = micro();
  ms_loader_t* b = micro();
  char* pa = static_cast<char*>(ms_allocate(a, MS_SPACE_NONCLASS, 200));
  char* pb = static_cast<char*>(ms_allocate(b, MS_SPACE_NONCLASS, 200));
  ASSERT_TRUE(pa != nullptr && pb != nullptr);
  EXPECT_EQ(pb, pa + 200) << "bumped back to back in one shared chunk";
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 1u);
  EXPECT_EQ(pool().live_bytes(MS_SPACE_NONCLASS), 400u);
  EXPECT_EQ(stats(a).chunks[MS_SPACE_NONCLASS], 0u) << "a micro loader owns no chunk";
  ASSERT_TRUE(identity_holds(ms_));
  // Fill the chunk with a third loader's blocks until a new one becomes current.
  ms_loader_t* c = micro();
  while (pool().chunks(MS_SPACE_NONCLASS) == 1) {
    ASSERT_NE(ms_allocate(c, MS_SPACE_NONCLASS, 512), nullptr) << ms_last_error_text();
  }
  ASSERT_TRUE(identity_holds(ms_));
  ms_stats_t before;
  ASSERT_MS_OK(ms_get_stats(ms_, &before));
  ASSERT_MS_OK(ms_loader_destroy(a));
  ASSERT_MS_OK(ms_loader_destroy(b));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 2u) << "c still has bytes in the first chunk";
  ASSERT_MS_OK(ms_loader_destroy(c));
  ASSERT_TRUE(identity_holds(ms_));
  // Nobody holds bytes in either chunk now; they stay open (current and tail window) until
  // purge or until a new chunk replaces the tail.
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 2u);
  EXPECT_EQ(pool().live_bytes(MS_SPACE_NONCLASS), 0u);
  ms_purge(ms_);
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 0u);
  ms_stats_t after;
  ASSERT_MS_OK(ms_get_stats(ms_, &after));
  EXPECT_EQ(after.total.used_bytes, 0u);
  EXPECT_EQ(after.space[MS_SPACE_NONCLASS].chunks_in_use, 0u);
  EXPECT_LT(after.total.committed_bytes - after.total.overhead_bytes,
            before.total.committed_bytes - before.total.overhead_bytes);
}

TEST_F(MicroPoolTest, OwnershipIsExactInsideASharedChunk) {
  ms_loader_t* a = micro();
  ms_loader_t* b = micro();
  char* a1 = static_cast<char*>(ms_allocate(a, MS_SPACE_NONCLASS, 64));
  char* b1 = static_cast<char*>(ms_allocate(b, MS_SPACE_NONCLASS, 64));
  char* a2 = static_cast<char*>(ms_allocate(a, MS_SPACE_NONCLASS, 64));
  ASSERT_EQ(b1, a1 + 64);
  ASSERT_EQ(a2, b1 + 64);
  EXPECT_EQ(ms_deallocate(a, b1, 64), MS_ERR_NOT_OWNED) << "b's block between two of a's";
  EXPECT_EQ(ms_deallocate(b, a1, 64), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_deallocate(a, a1, 128), MS_ERR_NOT_OWNED) << "runs into b's block";
  EXPECT_EQ(ms_deallocate(a, a2 + 64, 8), MS_ERR_NOT_OWNED) << "not handed out yet";
  EXPECT_EQ(ms_deallocate(a, a1 + 4, 8), MS_ERR_NOT_OWNED) << "misaligned";
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(ms_deallocate(a, a2, 64), MS_OK);
  EXPECT_EQ(ms_deallocate(b, b1, 64), MS_OK);
  ASSERT_TRUE(identity_holds(ms_));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].deallocated_bytes, 128u);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].used_bytes, 64u);
  // A freed pooled block stays charged to its loader until it dies; a second free of it is
  // refused rather than counted twice once nothing is left to free.
  EXPECT_EQ(ms_deallocate(b, b1, 64), MS_ERR_NOT_OWNED);
  ASSERT_TRUE(identity_holds(ms_));
  ASSERT_MS_OK(ms_loader_destroy(a));
  ASSERT_MS_OK(ms_loader_destroy(b));
  ASSERT_TRUE(identity_holds(ms_));
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.used_bytes + st.total.free_blocks_bytes, 0u);
}

TEST_F(MicroPoolTest, LoadersThatOutgrowThePoolGraduate) {
  // A block too large for a shared chunk's quarter: arenas at once, earlier blocks stay pooled.
  ms_loader_t* l = micro();
  void* small = ms_allocate(l, MS_SPACE_NONCLASS, 100);
  ASSERT_NE(small, nullptr);
  size_t graduations = pool().graduations();
  void* big = ms_allocate(l, MS_SPACE_NONCLASS, 3000);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(pool().graduations(), graduations + 1);
  ms_loader_stats_t ls = stats(l);
  EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], 104u + 3000u);
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(ms_deallocate(l, small, 100), MS_OK);
  EXPECT_EQ(ms_deallocate(l, big, 3000), MS_OK);
  ASSERT_TRUE(identity_holds(ms_));
  // Many small blocks: past MicroPool::kMaxLoaderBytes the loader is not micro any more.
  ms_loader_t* m = micro();
  for (size_t held = 0; held < MicroPool::kMaxLoaderBytes + 1024; held += 256) {
    ASSERT_NE(ms_allocate(m, held % 512 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, 256), nullptr);
    ASSERT_TRUE(identity_holds(ms_));
  }
  ls = stats(m);
  EXPECT_GT(ls.chunks[MS_SPACE_NONCLASS] + ls.chunks[MS_SPACE_CLASS], 0u);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS] + ls.used_bytes[MS_SPACE_CLASS],
            MicroPool::kMaxLoaderBytes + 1024);
  ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_loader_destroy(m));
  ms_purge(ms_);
  ASSERT_TRUE(identity_holds(ms_));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes);
}

TEST_F(MicroPoolTest, CheckedModeFencesMicroBlocks) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = 1;
  s.class_alignment_bytes = 64;
  make(s);
  ms_loader_t* l = micro();
  ms_loader_t* other = micro();
  char* k = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 100));
  char* a = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 61));
  char* o = static_cast<char*>(ms_allocate(other, MS_SPACE_NONCLASS, 64));
  ASSERT_TRUE(k != nullptr && a != nullptr && o != nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(k) % 64, 0u) << "class alignment kept in the pool";
  EXPECT_EQ(o, a + 64 + Fence::kBytes) << "the fence lies behind the block in the shared chunk";
  ASSERT_TRUE(identity_holds(ms_));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.fence_bytes, 3 * Fence::kBytes);
  // One byte past the 61-byte request: into the rounding slack.
  a[61] = 0;
  EXPECT_EQ(ms_verify(ms_), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_deallocate(l, a, 61), MS_ERR_OVERWRITE);
  a[61] = static_cast<char>(Fence::kSlack);
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(ms_deallocate(l, a, 61), MS_OK);
  EXPECT_EQ(ms_deallocate(l, a, 61), MS_ERR_DOUBLE_FREE);
  ASSERT_TRUE(identity_holds(ms_));
  // An overrun of the class block into its fence is reported at death; the loader dies anyway.
  k[100 + 4] = 0x41;
  EXPECT_EQ(ms_loader_destroy(l), MS_ERR_OVERWRITE);
  ASSERT_TRUE(identity_holds(ms_));
  // Dead micro blocks are zapped (the shared chunk is still current, so still readable).
  EXPECT_EQ(static_cast<unsigned char>(k[0]), Fence::kZapDead);
  ASSERT_MS_OK(ms_loader_destroy(other));
  ASSERT_TRUE(identity_holds(ms_));
}

// Holes: a dead loader's run in a chunk that survivors hold is reused by new loaders' blocks.
TEST_F(MicroPoolTest, ADeadLoadersRunBecomesAHoleThatANewLoaderFills) {
  ms_loader_t* a = micro();
  ms_loader_t* b = micro();
  ms_loader_t* c = micro();
  char* pa = static_cast<char*>(ms_allocate(a, MS_SPACE_NONCLASS, 512));
  char* pb = static_cast<char*>(ms_allocate(b, MS_SPACE_NONCLASS, 512));
  char* pc = static_cast<char*>(ms_allocate(c, MS_SPACE_NONCLASS, 512));
  ASSERT_TRUE(pa != nullptr && pb == pa + 512 && pc == pb + 512);
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u);
  ASSERT_MS_OK(ms_loader_destroy(b));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 1u);
  EXPECT_EQ(pool().hole_bytes(MS_SPACE_NONCLASS), 512u);
  // The new loader's blocks go to the hole, one after another (one run), before the current
  // chunk's room behind c.
  ms_loader_t* d = micro();
  char* d1 = static_cast<char*>(ms_allocate(d, MS_SPACE_NONCLASS, 200));
  ASSERT_TRUE(identity_holds(ms_));
  char* d2 = static_cast<char*>(ms_allocate(d, MS_SPACE_NONCLASS, 200));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(d1, pb);
  EXPECT_EQ(d2, pb + 200);
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u) << "the hole is the hole window now";
  EXPECT_EQ(stats(d).used_bytes[MS_SPACE_NONCLASS], 400u);
  // 112 bytes are left in it: a larger block goes behind c, and a small one of another loader
  // still fills the rest.
  char* d3 = static_cast<char*>(ms_allocate(d, MS_SPACE_NONCLASS, 200));
  EXPECT_EQ(d3, pc + 512);
  ms_loader_t* e = micro();
  char* e1 = static_cast<char*>(ms_allocate(e, MS_SPACE_NONCLASS, 112));
  EXPECT_EQ(e1, pb + 400);
  ASSERT_TRUE(identity_holds(ms_));
  // Ownership stays exact across the hole: d owns its blocks, not e's.
  EXPECT_EQ(ms_deallocate(d, e1, 112), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_deallocate(d, d2, 200), MS_OK);
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 1u);
  for (ms_loader_t* l : {a, c, d, e}) {
    ASSERT_MS_OK(ms_loader_destroy(l));
    ASSERT_TRUE(identity_holds(ms_));
  }
  EXPECT_EQ(pool().live_bytes(MS_SPACE_NONCLASS), 0u);
  ms_purge(ms_);
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 0u);
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u);
}

TEST_F(MicroPoolTest, DeadRunsMergeWithHolesAndGiveBackTheTop) {
  ms_loader_t* l[5];
  char* p[5];
  for (int i = 0; i < 5; i++) {
    l[i] = micro();
    p[i] = static_cast<char*>(ms_allocate(l[i], MS_SPACE_NONCLASS, 256));
    ASSERT_NE(p[i], nullptr);
    if (i > 0) ASSERT_EQ(p[i], p[i - 1] + 256);
  }
  // The last loader's run ends at the current chunk's top: the top moves back, no hole.
  ASSERT_MS_OK(ms_loader_destroy(l[4]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u);
  // Neighbours merge: l1 then l3 then l2 leave one hole of 768 bytes.
  ASSERT_MS_OK(ms_loader_destroy(l[1]));
  ASSERT_MS_OK(ms_loader_destroy(l[3]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 1u) << "l3's run ended at the top";
  EXPECT_EQ(pool().hole_bytes(MS_SPACE_NONCLASS), 256u);
  ms_loader_t* f = micro();
  char* f1 = static_cast<char*>(ms_allocate(f, MS_SPACE_NONCLASS, 64));
  EXPECT_EQ(f1, p[1]) << "the hole before the room at the top";
  ASSERT_MS_OK(ms_loader_destroy(f));
  ASSERT_TRUE(identity_holds(ms_));
  ASSERT_MS_OK(ms_loader_destroy(l[2]));
  ASSERT_TRUE(identity_holds(ms_));
  // l2's run touched the hole window (what was l1's) below and the top above: the top takes
  // both.
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u);
  ms_loader_t* g = micro();
  char* g1 = static_cast<char*>(ms_allocate(g, MS_SPACE_NONCLASS, 512));
  EXPECT_EQ(g1, p[1]) << "512 bytes where l1 and l2 lay";
  ASSERT_TRUE(identity_holds(ms_));
  ASSERT_MS_OK(ms_loader_destroy(g));
  ASSERT_MS_OK(ms_loader_destroy(l[0]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().live_bytes(MS_SPACE_NONCLASS), 0u);
}

TEST_F(MicroPoolTest, AChunkGoesBackWithItsHoles) {
  // Chunk 1: loaders of 512 bytes each until a new chunk is current.
  std::vector<ms_loader_t*> first;
  std::vector<char*> blocks;
  while (pool().chunks(MS_SPACE_NONCLASS) < 2) {
    first.push_back(micro());
    blocks.push_back(static_cast<char*>(ms_allocate(first.back(), MS_SPACE_NONCLASS, 512)));
    ASSERT_NE(blocks.back(), nullptr);
  }
  // The last one opened chunk 2; a filler makes a third current, so chunk 1 is neither current
  // nor tail.
  ms_loader_t* filler = micro();
  while (pool().chunks(MS_SPACE_NONCLASS) < 3) {
    ASSERT_NE(ms_allocate(filler, MS_SPACE_NONCLASS, 1000), nullptr);
  }
  first.pop_back();
  // Every other loader of chunk 1 dies: holes; then the rest: the chunk goes back, holes too.
  for (size_t i = 0; i < first.size(); i += 2) ASSERT_MS_OK(ms_loader_destroy(first[i]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_GE(pool().holes(MS_SPACE_NONCLASS), first.size() / 2 - 1);
  for (size_t i = 1; i < first.size(); i += 2) ASSERT_MS_OK(ms_loader_destroy(first[i]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS), 0u);
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS), 2u);
  ms_loader_t* late = micro();
  ASSERT_NE(ms_allocate(late, MS_SPACE_NONCLASS, 64), nullptr);
  ASSERT_TRUE(identity_holds(ms_));
}

TEST_F(MicroPoolTest, KlassHolesKeepTheClassAlignment) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = 64;
  make(s);
  std::vector<ms_loader_t*> l;
  std::vector<char*> k;
  for (int i = 0; i < 5; i++) {
    l.push_back(micro());
    k.push_back(static_cast<char*>(ms_allocate(l.back(), MS_SPACE_CLASS, 528)));
    ASSERT_NE(k.back(), nullptr);
  }
  ASSERT_MS_OK(ms_loader_destroy(l[1]));
  ASSERT_MS_OK(ms_loader_destroy(l[2]));
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().holes(MS_SPACE_CLASS), 2u) << "the padding between them is in no run";
  for (int i = 0; i < 2; i++) {
    ms_loader_t* n = micro();
    char* p = static_cast<char*>(ms_allocate(n, MS_SPACE_CLASS, 500));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    EXPECT_TRUE(p >= k[1] && p + 500 <= k[2] + 528) << "in the hole of l1 and l2";
    l.push_back(n);
    ASSERT_TRUE(identity_holds(ms_));
  }
  for (ms_loader_t* x : l) {
    if (x != l[1] && x != l[2]) ASSERT_MS_OK(ms_loader_destroy(x));
  }
  ASSERT_TRUE(identity_holds(ms_));
}

// Waves of micro loaders, most of each dying in random order while a tenth survive: the next
// wave fills the holes the last one left. Measured at each wave's peak, committed (bookkeeping
// aside) / used: at most 1.135 over ten waves; 2.36 after ten waves without holes (the pool's
// chunks grew with the waves: survivors pinned them).
TEST_F(MicroPoolTest, WavesOfLoadersReuseTheHolesOfTheDead) {
  std::mt19937_64 rng(11);
  std::vector<ms_loader_t*> survivors;
  size_t graduations = pool().graduations();
  for (int wave = 0; wave < 10; wave++) {
    std::vector<ms_loader_t*> born;
    for (int i = 0; i < 200; i++) {
      born.push_back(micro());
      ASSERT_TRUE(test::fill_micro_loader(born.back())) << ms_last_error_text();
    }
    ms_stats_t st;
    ASSERT_MS_OK(ms_get_stats(ms_, &st));
    EXPECT_LE(static_cast<double>(st.total.committed_bytes - st.total.overhead_bytes),
              1.2 * static_cast<double>(st.total.used_bytes))
        << "wave " << wave;
    std::shuffle(born.begin(), born.end(), rng);
    for (size_t i = 0; i < born.size(); i++) {
      if (i < 20) {
        survivors.push_back(born[i]);
      } else {
        ASSERT_MS_OK(ms_loader_destroy(born[i]));
      }
      if (i % 20 == 0) ASSERT_TRUE(identity_holds(ms_)) << "wave " << wave << " death " << i;
    }
    EXPECT_GT(pool().hole_bytes(MS_SPACE_NONCLASS), 0u);
  }
  // Loaders do not hop from hole to hole until their runs are used up (1 of 2 000 did).
  EXPECT_LE(pool().graduations() - graduations, 10u);
  for (ms_loader_t* l : survivors) ASSERT_MS_OK(ms_loader_destroy(l));
  ms_purge(ms_);
  ASSERT_TRUE(identity_holds(ms_));
  EXPECT_EQ(pool().chunks(MS_SPACE_NONCLASS) + pool().chunks(MS_SPACE_CLASS), 0u);
  EXPECT_EQ(pool().holes(MS_SPACE_NONCLASS) + pool().holes(MS_SPACE_CLASS), 0u);
}

// Random create / allocate / free / destroy over reclaim policies, class alignments and checked
// mode; pool and identity checked after every step (ms_verify checks the pool, the loaders'
// runs, and that the loaders' pooled bytes add up to the pool's).
class MicroPoolRandom
    : public ::testing::TestWithParam<std::tuple<ms_reclaim_t, size_t, bool>> {};

TEST_P(MicroPoolRandom, IdentityAfterEveryStep) {
  auto [reclaim, alignment, checked] = GetParam();
  ms_settings_t s = test::policy_settings(reclaim, alignment, checked);
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  struct Block {
    char* p;
    size_t bytes;
  };
  struct Live {
    ms_loader_t* l;
    std::vector<Block> blocks;
  };
  std::vector<Live> live;
  std::mt19937_64 rng(alignment * 31 + reclaim * 7 + checked);
  for (int step = 0; step < 600; step++) {
    unsigned r = static_cast<unsigned>(rng() % 100);
    if (live.empty() || r < 15) {
      ms_loader_kind_t kind = rng() % 8 == 0 ? MS_LOADER_STANDARD : MS_LOADER_MICRO;
      ms_loader_t* l = ms_loader_create(ms, kind, rng() % 4 == 0 ? MS_LOADER_SHARED : 0);
      ASSERT_NE(l, nullptr) << ms_last_error_text();
      live.push_back({l, {}});
    } else if (r < 80) {
      Live& l = live[rng() % live.size()];
      ms_space_t space = rng() % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
      // Mostly micro sizes, sometimes one that makes the loader graduate.
      size_t bytes = rng() % 50 == 0 ? 1500 + rng() % 3000 : 8 + rng() % 600;
      char* p = static_cast<char*>(ms_allocate(l.l, space, bytes));
      ASSERT_NE(p, nullptr) << ms_last_error_text();
      if (space == MS_SPACE_CLASS) {
        ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
        ASSERT_TRUE(ms_is_class_space(ms, p));
      }
      std::memset(p, 0x5A, bytes);
      l.blocks.push_back({p, bytes});
    } else if (r < 88) {
      Live& l = live[rng() % live.size()];
      if (l.blocks.empty()) continue;
      size_t i = rng() % l.blocks.size();
      ASSERT_MS_OK(ms_deallocate(l.l, l.blocks[i].p, l.blocks[i].bytes));
      l.blocks.erase(l.blocks.begin() + static_cast<long>(i));
    } else {
      size_t i = rng() % live.size();
      for (const Block& b : live[i].blocks) {
        for (size_t k = 0; k < b.bytes; k++) ASSERT_EQ(b.p[k], 0x5A) << "a block was overwritten";
      }
      ASSERT_MS_OK(ms_loader_destroy(live[i].l));
      live.erase(live.begin() + static_cast<long>(i));
    }
    if (step % 200 == 0) ms_purge(ms);
    ASSERT_TRUE(identity_holds(ms)) << "step " << step;
  }
  for (const Live& l : live) ASSERT_MS_OK(ms_loader_destroy(l.l));
  ms_purge(ms);
  ASSERT_TRUE(identity_holds(ms));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  if (reclaim != MS_RECLAIM_NONE) {
    EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes) << "only bookkeeping is left";
  }
  EXPECT_EQ(impl(ms).micro_pool().chunks(MS_SPACE_NONCLASS) +
                impl(ms).micro_pool().chunks(MS_SPACE_CLASS),
            0u);
  ms_destroy(ms);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, MicroPoolRandom,
    ::testing::Combine(::testing::Values(MS_RECLAIM_NONE, MS_RECLAIM_BALANCED,
                                         MS_RECLAIM_AGGRESSIVE),
                       ::testing::Values(size_t{8}, size_t{64}, size_t{1024}),
                       ::testing::Bool()));

// Real memory: micro loaders cost about what malloc would for their blocks while they live
// (2 136 live bytes each; private chunks cost 4 624 bytes of RSS), and it leaves the process
// when they die.
TEST_F(MicroPoolTest, MicroLoadersRssWhileLiveAndAfterDeath) {
  constexpr size_t kLoaders = 20000;
  std::vector<ms_loader_t*> loaders(kLoaders);
  size_t start = proc_memory::resident_bytes();
  for (size_t i = 0; i < kLoaders; i++) {
    loaders[i] = micro();
    ASSERT_NE(loaders[i], nullptr);
    ASSERT_TRUE(test::fill_micro_loader(loaders[i])) << ms_last_error_text();
  }
  size_t live = proc_memory::resident_bytes();
  EXPECT_LE(live - start, kLoaders * 2700) << (live - start) / kLoaders << " bytes per loader";
  std::shuffle(loaders.begin(), loaders.end(), std::mt19937_64(7));
  for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
  ms_purge(ms_);
  ASSERT_TRUE(identity_holds(ms_));
  size_t purged = proc_memory::resident_bytes();
  // Left: the last 1 024 dead handles (8 KiB) and a few bitmap and header pages. (With the
  // quarantine of 1 024 dead loader objects, destroyed in random order, up to 4 MiB more.)
  EXPECT_LE(purged, start + 1024 * 1024) << (purged - start)
                                                       << " bytes above the start";
}

}  // namespace
}  // namespace metaspace
