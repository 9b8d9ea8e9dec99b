// Boot and standard loaders whose inline paths are open keep their arenas at the start of their
// first non-class chunk (loader/loader_arenas.hpp): made by the first non-class allocation, not
// at creation; counted as overhead, not used; the chunk goes back with the loader. Shared,
// checked and counting loaders, micro loaders, and loaders whose first need is a class block keep
// the bookkeeping slab.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "arena/growth_policy.hpp"
#include "loader/loader_arenas.hpp"
#include "os/fault_injection.hpp"
#include "support/ms_assertions.hpp"

namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
// A standard loader's first two non-class chunks (GrowthPolicy's default sequence).
const size_t kFirstChunk =
    metaspace::GrowthPolicy::default_sequence(MS_LOADER_STANDARD, MS_SPACE_NONCLASS)[0];
const size_t kSecondChunk =
    metaspace::GrowthPolicy::default_sequence(MS_LOADER_STANDARD, MS_SPACE_NONCLASS)[1];
const size_t kPrefix = metaspace::LoaderArenas::chunk_prefix_bytes();

// Offset of a block in its chunk, for a chunk of `chunk_bytes` (chunks are aligned to their size).
size_t offset_in_chunk(const void* p, size_t chunk_bytes) {
  return reinterpret_cast<uintptr_t>(p) % chunk_bytes;
}

ms_stats_t stats(ms_metaspace_t* ms) {
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), MS_OK) << ms_last_error_text();
  return st;
}

// The prefix is neither used nor free in chunks: with one loader that owns the space's only
// non-class chunks, free in chunks is exactly its committed rest behind its blocks and arenas.
void expect_prefix_is_overhead(ms_metaspace_t* ms, ms_loader_t* l, size_t used) {
  ms_loader_stats_t ls = metaspace::test::loader_stats(l);
  ms_stats_t st = stats(ms);
  const ms_space_stats_t& nc = st.space[MS_SPACE_NONCLASS];
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], used);
  EXPECT_EQ(nc.used_bytes, used);
  EXPECT_EQ(nc.free_in_chunks_bytes, ls.committed_bytes[MS_SPACE_NONCLASS] - used -
                                         ls.free_blocks_bytes[MS_SPACE_NONCLASS] - kPrefix);
  ms_usage_t u{};
  u.size = sizeof u;
  ASSERT_MS_OK(ms_get_usage(ms, &u));
  EXPECT_EQ(u.space[MS_SPACE_NONCLASS].overhead_bytes, nc.overhead_bytes);
  EXPECT_EQ(u.space[MS_SPACE_NONCLASS].committed_bytes, nc.committed_bytes);
  ASSERT_MS_OK(ms_verify(ms));
}

class ArenasInFirstChunk : public ::testing::Test {
 protected:
  void SetUp() override { ms_ = make({}); }
  void TearDown() override {
    if (ms_ != nullptr) ms_destroy(ms_);
  }
  struct Options {
    int checked = 0;
    int count_allocations = 0;
    size_t cap = 0;
  };
  static ms_metaspace_t* make(Options o) {
    ms_settings_t s;
    ms_settings_init(&s);
    s.checked = o.checked;
    s.count_allocations = o.count_allocations;
    s.max_committed_bytes = o.cap;
    ms_metaspace_t* ms = ms_create(&s);
    EXPECT_NE(ms, nullptr) << ms_last_error_text();
    return ms;
  }
  // After a refused first allocation: the next one of 64 bytes succeeds with the arenas before
  // it in the loader's first 4 KiB chunk; then the loader goes and everything verifies.
  void retry_lands_after_the_arenas(ms_loader_t* l) {
    void* p = ms_allocate(l, MS_SPACE_NONCLASS, 64);
    ASSERT_NE(p, nullptr) << ms_last_error_text();
    EXPECT_EQ(offset_in_chunk(p, 4 * KiB), kPrefix);
    expect_prefix_is_overhead(ms_, l, 64);
    verify_destroy_verify({l});
  }
  // Verifies, destroys the loaders in the order given, verifies again.
  void verify_destroy_verify(std::initializer_list<ms_loader_t*> loaders) {
    ASSERT_MS_OK(ms_verify(ms_));
    for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
    ASSERT_MS_OK(ms_verify(ms_));
  }
  ms_metaspace_t* ms_ = nullptr;
};

TEST_F(ArenasInFirstChunk, LieAtTheStartOfTheFirstNonClassChunk) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(offset_in_chunk(p, 4 * KiB), kPrefix);
  EXPECT_EQ(kPrefix % 16, 0u);
  ms_loader_stats_t ls = metaspace::test::loader_stats(l);
  EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);
  EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], kFirstChunk);
  expect_prefix_is_overhead(ms_, l, 104);
  // The fast path serves the next blocks, behind the first.
  void* q = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  EXPECT_EQ(static_cast<char*>(q), static_cast<char*>(p) + 104);
  expect_prefix_is_overhead(ms_, l, 168);
  // Frees and reuse keep the identity; a block in the prefix is not the loader's.
  ASSERT_MS_OK(ms_deallocate(l, q, 64));
  expect_prefix_is_overhead(ms_, l, 104);
  char* base = static_cast<char*>(p) - kPrefix;
  EXPECT_EQ(ms_deallocate(l, base, 64), MS_ERR_NOT_OWNED);
  ASSERT_MS_OK(ms_verify(ms_));
  // More than the first chunk holds: the next chunks, while the arenas stay where they are.
  size_t used = 104;
  for (int i = 0; i < 200; i++) {
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 200), nullptr);
    used += 200;
    if (i % 50 == 0) expect_prefix_is_overhead(ms_, l, used);
  }
  expect_prefix_is_overhead(ms_, l, used);
  ms_stats_t before = stats(ms_);
  ASSERT_MS_OK(ms_loader_destroy(l));
  ms_stats_t after = stats(ms_);
  EXPECT_EQ(after.total.used_bytes, 0u);
  // Every non-class chunk went back, the arenas' own last.
  EXPECT_EQ(after.space[MS_SPACE_NONCLASS].chunks_in_use, 0u);
  EXPECT_GE(before.space[MS_SPACE_NONCLASS].chunks_in_use, 1u);
  EXPECT_EQ(after.space[MS_SPACE_NONCLASS].free_in_chunks_bytes, 0u);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(ArenasInFirstChunk, TheHomeChunkDoublesInPlaceWhileItIsTheOnlyOneAndKeepsItsStart) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* first = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(offset_in_chunk(first, 4 * KiB), kPrefix);
  // Beyond 4 KiB, and again beyond 8: the home chunk doubles in place (its buddy is free in a
  // fresh metaspace), where a chunk without the arenas is followed by new 4 KiB ones.
  size_t used = 64;
  for (size_t chunk : {8 * KiB, 16 * KiB}) {
    while (used + 256 <= chunk / 2) {
      ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 256), nullptr);
      used += 256;
    }
    ms_loader_stats_t ls = metaspace::test::loader_stats(l);
    EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);
    EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], chunk);
    EXPECT_EQ(offset_in_chunk(first, chunk), kPrefix);
    expect_prefix_is_overhead(ms_, l, used);
  }
  // With the buddy taken, the next chunk comes from the policy and the home chunk stays put.
  ms_loader_t* other = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_loader_t* blocker = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(other, MS_SPACE_NONCLASS, 64), nullptr);
  ASSERT_NE(ms_allocate(blocker, MS_SPACE_NONCLASS, 20 * KiB), nullptr);
  verify_destroy_verify({l, other, blocker});
}

TEST_F(ArenasInFirstChunk, AHomeChunkWhoseBuddyIsTakenIsFollowedByTheNextChunk) {
  // Two loaders' home chunks side by side: neither can double, so the policy's next chunk.
  ms_loader_t* a = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_loader_t* b = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* pa = ms_allocate(a, MS_SPACE_NONCLASS, 64);
  void* pb = ms_allocate(b, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(pa, nullptr);
  ASSERT_NE(pb, nullptr);
  bool buddies = reinterpret_cast<uintptr_t>(pa) / (2 * kFirstChunk) ==
                 reinterpret_cast<uintptr_t>(pb) / (2 * kFirstChunk);
  if (!buddies) GTEST_SKIP() << "the two first chunks are not buddies";
  size_t used = 64;
  while (used + 256 <= kFirstChunk) {
    ASSERT_NE(ms_allocate(a, MS_SPACE_NONCLASS, 256), nullptr);
    used += 256;
  }
  ms_loader_stats_t ls = metaspace::test::loader_stats(a);
  EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 2u);
  EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], kFirstChunk + kSecondChunk);
  EXPECT_EQ(offset_in_chunk(pa, 4 * KiB), kPrefix);
  verify_destroy_verify({b, a});
}

TEST_F(ArenasInFirstChunk, ALoaderDestroyedBeforeAnyAllocationCostsNoChunk) {
  ms_stats_t before = stats(ms_);
  for (ms_loader_kind_t kind : {MS_LOADER_STANDARD, MS_LOADER_BOOT}) {
    ms_loader_t* l = ms_loader_create(ms_, kind, 0);
    ASSERT_NE(l, nullptr);
    ms_stats_t st = stats(ms_);
    EXPECT_EQ(st.total.chunks_in_use, before.total.chunks_in_use);
    EXPECT_EQ(st.total.committed_bytes - st.total.overhead_bytes,
              before.total.committed_bytes - before.total.overhead_bytes);
    ms_loader_stats_t ls = metaspace::test::loader_stats(l);
    EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS] + ls.chunks[MS_SPACE_CLASS], 0u);
    EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], 0u);
    ASSERT_MS_OK(ms_verify(ms_));
    ASSERT_MS_OK(ms_loader_destroy(l));
    st = stats(ms_);
    EXPECT_EQ(st.total.chunks_in_use, before.total.chunks_in_use);
    ASSERT_MS_OK(ms_verify(ms_));
  }
}

TEST_F(ArenasInFirstChunk, AFirstRequestLargerThanTheFirstChunkGetsAChunkForBoth) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 10 * KiB);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(offset_in_chunk(p, 16 * KiB), kPrefix);
  ms_loader_stats_t ls = metaspace::test::loader_stats(l);
  EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);
  EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], 16 * KiB);
  expect_prefix_is_overhead(ms_, l, 10 * KiB);
  // A whole root chunk cannot share one with the arenas: they come from the slab then.
  ms_loader_t* big = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* q = ms_allocate(big, MS_SPACE_NONCLASS, 4 * MiB);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(offset_in_chunk(q, 4 * MiB), 0u);
  verify_destroy_verify({big, l});
}

TEST_F(ArenasInFirstChunk, AClassBlockFirstTakesTheSlab) {
  // A boot loader's Klasses do not come from the micro pool: its first class block makes the
  // arenas in the slab, and its non-class blocks start at their chunk's base.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_BOOT, 0);
  ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 528), nullptr);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(offset_in_chunk(p, 4 * KiB), 0u);
  ASSERT_MS_OK(ms_verify(ms_));
  // A standard loader's first Klass comes from the pool and needs no arenas at all.
  ms_loader_t* s = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* k = ms_allocate(s, MS_SPACE_CLASS, 528);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(metaspace::test::loader_stats(s).chunks[MS_SPACE_NONCLASS], 0u);
  void* n = ms_allocate(s, MS_SPACE_NONCLASS, 64);
  EXPECT_EQ(offset_in_chunk(n, 4 * KiB), kPrefix);
  // Its pooled Klass freed before any other need of the arenas: the slab, not a chunk.
  ms_loader_t* t = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* tk = ms_allocate(t, MS_SPACE_CLASS, 528);
  ASSERT_MS_OK(ms_deallocate(t, tk, 528));
  EXPECT_EQ(metaspace::test::loader_stats(t).chunks[MS_SPACE_NONCLASS], 0u);
  void* tn = ms_allocate(t, MS_SPACE_NONCLASS, 64);
  EXPECT_EQ(offset_in_chunk(tn, 4 * KiB), 0u);
  ASSERT_MS_OK(ms_verify(ms_));
  for (ms_loader_t* x : {l, s, t}) ASSERT_MS_OK(ms_loader_destroy(x));
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(ArenasInFirstChunk, SharedCheckedAndCountingLoadersKeepTheSlab) {
  ms_loader_t* shared = ms_loader_create(ms_, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  void* p = ms_allocate(shared, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(offset_in_chunk(p, 4 * KiB), 0u);
  ASSERT_MS_OK(ms_loader_destroy(shared));
  for (Options o : {Options{.checked = 1}, Options{.count_allocations = 1}}) {
    ms_metaspace_t* ms = make(o);
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    void* q = ms_allocate(l, MS_SPACE_NONCLASS, 64);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(offset_in_chunk(q, 4 * KiB), 0u) << o.checked;
    ASSERT_MS_OK(ms_verify(ms));
    ASSERT_MS_OK(ms_loader_destroy(l));
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

TEST_F(ArenasInFirstChunk, AFirstAllocationRefusedAtTheCapChangesNothing) {
  ms_destroy(ms_);
  ms_ = make({.cap = 1 * MiB});
  // Another loader takes what the cap allows.
  ms_loader_t* hog = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  std::vector<void*> blocks;
  for (size_t n : {8 * KiB, size_t{64}}) {
    for (;;) {
      void* b = ms_allocate(hog, MS_SPACE_NONCLASS, n);
      if (b == nullptr) break;
      blocks.push_back(b);
    }
    ASSERT_EQ(ms_last_error(), MS_ERR_LIMIT);
  }
  // Creation takes no chunk memory, so it is not refused.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr) << ms_last_error_text();
  ms_stats_t before = stats(ms_);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  ms_stats_t after = stats(ms_);
  // Chunk memory as it was (the attempt's bookkeeping, a chunk start table page, may stay).
  EXPECT_EQ(after.total.committed_bytes - after.total.overhead_bytes,
            before.total.committed_bytes - before.total.overhead_bytes);
  EXPECT_EQ(after.total.chunks_in_use, before.total.chunks_in_use);
  EXPECT_EQ(after.total.used_bytes, before.total.used_bytes);
  EXPECT_EQ(metaspace::test::loader_stats(l).chunks[MS_SPACE_NONCLASS], 0u);
  ASSERT_MS_OK(ms_verify(ms_));
  // Room again: the retry succeeds, with the arenas in the chunk.
  ASSERT_MS_OK(ms_loader_destroy(hog));
  ms_purge(ms_);
  retry_lands_after_the_arenas(l);
}

TEST_F(ArenasInFirstChunk, AFirstAllocationMeetingACommitFaultChangesNothing) {
  using metaspace::os::FaultPoint;
  // The node and its bookkeeping exist, and the chunk memory went back: the next first chunk
  // needs a commit of its own.
  ms_loader_t* warm = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(warm, MS_SPACE_NONCLASS, 64), nullptr);
  ASSERT_MS_OK(ms_loader_destroy(warm));
  ms_purge(ms_);
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_stats_t before = stats(ms_);
  metaspace::os::inject_fault(FaultPoint::kCommit, 1);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 64);
  metaspace::os::inject_fault(FaultPoint::kCommit, 0);
  if (p != nullptr) GTEST_SKIP() << "the first chunk needed no commit";
  EXPECT_NE(ms_last_error(), MS_OK);
  ms_stats_t after = stats(ms_);
  // Chunk memory is as it was (bookkeeping the attempt made, such as a chunk start table page,
  // may stay: overhead, as when an arena's later chunk meets the fault).
  EXPECT_EQ(after.total.committed_bytes - after.total.overhead_bytes,
            before.total.committed_bytes - before.total.overhead_bytes);
  EXPECT_EQ(after.total.chunks_in_use, before.total.chunks_in_use);
  EXPECT_EQ(after.total.used_bytes, 0u);
  EXPECT_EQ(metaspace::test::loader_stats(l).chunks[MS_SPACE_NONCLASS], 0u);
  ASSERT_MS_OK(ms_verify(ms_));
  retry_lands_after_the_arenas(l);
}

TEST_F(ArenasInFirstChunk, LoadersInRandomOrderVerifyAfterEveryStep) {
  std::mt19937 rng(11);
  struct Live {
    ms_loader_t* l;
    std::vector<std::pair<void*, size_t>> blocks;
  };
  std::vector<Live> live;
  const ms_loader_kind_t kinds[] = {MS_LOADER_STANDARD, MS_LOADER_STANDARD, MS_LOADER_BOOT,
                                    MS_LOADER_MICRO};
  for (int step = 0; step < 1500; step++) {
    unsigned what = rng() % 10;
    if (live.empty() || what < 2) {
      unsigned flags = rng() % 8 == 0 ? MS_LOADER_SHARED : 0;
      ms_loader_t* l = ms_loader_create(ms_, kinds[rng() % 4], flags);
      ASSERT_NE(l, nullptr) << ms_last_error_text();
      live.push_back({l, {}});
    } else if (what < 3) {
      size_t i = rng() % live.size();
      ASSERT_MS_OK(ms_loader_destroy(live[i].l));
      live[i] = live.back();
      live.pop_back();
    } else if (what < 4) {
      Live& x = live[rng() % live.size()];
      if (x.blocks.empty()) continue;
      size_t b = rng() % x.blocks.size();
      ASSERT_MS_OK(ms_deallocate(x.l, x.blocks[b].first, x.blocks[b].second));
      x.blocks[b] = x.blocks.back();
      x.blocks.pop_back();
    } else {
      Live& x = live[rng() % live.size()];
      ms_space_t space = rng() % 5 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
      size_t n = rng() % 16 == 0 ? 1 + rng() % (20 * KiB) : 8 + rng() % 600;
      void* p = ms_allocate(x.l, space, n);
      ASSERT_NE(p, nullptr) << ms_last_error_text();
      x.blocks.push_back({p, n});
    }
    ASSERT_MS_OK(ms_verify(ms_)) << "step " << step;
  }
  for (Live& x : live) ASSERT_MS_OK(ms_loader_destroy(x.l));
  ASSERT_MS_OK(ms_verify(ms_));
  ms_stats_t st = stats(ms_);
  EXPECT_EQ(st.total.used_bytes, 0u);
}

}  // namespace
