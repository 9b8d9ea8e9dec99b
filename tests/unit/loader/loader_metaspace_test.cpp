// A loader metaspace: the loader kind picks both growth policies, the fast path is on only
// where it may serve, freed class blocks hold classes again, and the per-loader statistics are
// exact.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <random>
#include <vector>

#include "support/ms_assertions.hpp"

namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;


// Chunk level of a chunk size with 4 MiB root chunks.
int level_of(size_t bytes) {
  int level = 0;
  for (size_t b = 4 * MiB; b > bytes; b /= 2) level++;
  return level;
}

const ms__bump& window(ms_loader_t* l, ms_space_t space) {
  return ms__head_of(l)->bump[space];
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { open(8); }
  void TearDown() override { ms_destroy(ms_); }
  void open(size_t class_alignment) {
    if (ms_ != nullptr) ms_destroy(ms_);
    ms_settings_t s;
    ms_settings_init(&s);
    s.class_alignment_bytes = class_alignment;
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
  }
  static ms_loader_stats_t stats(ms_loader_t* l) { return metaspace::test::loader_stats(l); }
  ms_metaspace_t* ms_ = nullptr;
};

TEST_F(LoaderTest, KindChoosesFirstChunks) {
  struct Case {
    ms_loader_kind_t kind;
    size_t nonclass_chunk;
    size_t class_chunk;
  };
  // Micro loaders own no chunks: see MicroLoaderStaysTiny and micro_pool_test.cpp. A standard
  // loader's first class chunk comes once its Klasses outgrow the pool
  // (StandardLoaderKlassesComeFromThePool).
  for (const Case& c : {Case{MS_LOADER_BOOT, 4 * MiB, 256 * KiB}}) {
    ms_loader_t* l = ms_loader_create(ms_, c.kind, 0);
    ASSERT_NE(l, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 528), nullptr);
    ms_loader_stats_t ls = stats(l);
    EXPECT_EQ(ls.kind, c.kind);
    EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);
    EXPECT_EQ(ls.chunks_by_level[MS_SPACE_NONCLASS][level_of(c.nonclass_chunk)], 1u) << c.kind;
    EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], c.nonclass_chunk);
    EXPECT_EQ(ls.chunks_by_level[MS_SPACE_CLASS][level_of(c.class_chunk)], 1u) << c.kind;
    EXPECT_EQ(ls.capacity_bytes[MS_SPACE_CLASS], c.class_chunk);
    ASSERT_MS_OK(ms_verify(ms_));
  }
}

TEST_F(LoaderTest, MicroLoaderStaysTiny) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
  // One hidden class: a 66-word Klass and ~300 non-class words.
  ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 528), nullptr);
  for (int i = 0; i < 20; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 120), nullptr);
  ms_loader_stats_t ls = stats(l);
  // Its blocks lie in the micro pool's shared chunks: it holds exactly what it allocated.
  EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS] + ls.chunks[MS_SPACE_CLASS], 0u);
  EXPECT_EQ(ls.capacity_bytes[MS_SPACE_NONCLASS], 20 * 120u);
  EXPECT_EQ(ls.capacity_bytes[MS_SPACE_CLASS], 528u);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], 20 * 120u);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_CLASS], 528u);
  ASSERT_MS_OK(ms_verify(ms_));
}

// A loader with a few classes (the lab's interleave trace: 400 loaders of two ~590-byte Klasses
// each) pays no class chunk: its Klasses are packed into the micro pool's shared chunks, back to
// back with other loaders'. Before, each took a 2 KiB class chunk: 872 bytes of it unused.
TEST_F(LoaderTest, StandardLoaderKlassesComeFromThePool) {
  constexpr int kLoaders = 100;
  constexpr size_t kKlasses[] = {584, 592};
  std::vector<ms_loader_t*> loaders;
  for (int i = 0; i < kLoaders; i++) {
    loaders.push_back(ms_loader_create(ms_, MS_LOADER_STANDARD, 0));
    ASSERT_NE(loaders.back(), nullptr);
  }
  // Round-robin, as the trace loads them: a loader's two Klasses are not neighbours.
  for (size_t bytes : kKlasses) {
    for (ms_loader_t* l : loaders) {
      char* k = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, bytes));
      ASSERT_NE(k, nullptr) << ms_last_error_text();
      EXPECT_TRUE(ms_is_class_space(ms_, k));
      std::memset(k, 0x4B, bytes);
      ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 1500), nullptr);
    }
  }
  for (ms_loader_t* l : loaders) {
    ms_loader_stats_t ls = stats(l);
    EXPECT_EQ(ls.chunks[MS_SPACE_CLASS], 0u);
    EXPECT_EQ(ls.capacity_bytes[MS_SPACE_CLASS], 584u + 592u);
    EXPECT_EQ(ls.used_bytes[MS_SPACE_CLASS], 584u + 592u);
    EXPECT_EQ(ls.chunks[MS_SPACE_NONCLASS], 1u);  // its own 4 KiB chunk
  }
  ASSERT_MS_OK(ms_verify(ms_));
  // Class space holds the guard granule and the packed Klasses: 117.6 KB live in 30 granules
  // of 4 KiB; with a class chunk each it was 100 chunks of 2 KiB (204.8 KB).
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  const ms_space_stats_t& cs = st.space[MS_SPACE_CLASS];
  EXPECT_EQ(cs.used_bytes, kLoaders * (584u + 592u));
  EXPECT_LE(cs.committed_bytes - cs.overhead_bytes, cs.used_bytes + 2 * 4 * KiB + 4 * KiB)
      << "at most two granules short of full (current chunk and tail) beyond the guard";
  // Death in any order: the Klasses leave, chunks nobody holds any more go back.
  for (int i = 0; i < kLoaders; i += 2) ASSERT_MS_OK(ms_loader_destroy(loaders[i]));
  ASSERT_MS_OK(ms_verify(ms_));
  for (int i = 1; i < kLoaders; i += 2) ASSERT_MS_OK(ms_loader_destroy(loaders[i]));
  ms_purge(ms_);
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.used_bytes, 0u);
  EXPECT_EQ(st.total.chunks_in_use, 1u) << "only the class space guard stays in use";
  ASSERT_MS_OK(ms_verify(ms_));
}

// What a one-class standard loader costs the process: its 4 KiB non-class chunk, its Klass packed
// into the micro pool, and its bookkeeping (loader object 144 B, the non-class arena's part
// 320 B, one chunk header). With a class chunk and class arena of its own it was ~7.1 KiB for
// 2.6 KiB live: a 2 KiB class chunk, a 640-byte LoaderArenas, two chunk headers.
TEST_F(LoaderTest, OneClassStandardLoaderFootprint) {
  constexpr size_t kLoaders = 300;
  constexpr size_t kNonClassBlocks = 20, kNonClassBytes = 100, kKlassBytes = 584;
  ms_stats_t before;
  ASSERT_MS_OK(ms_get_stats(ms_, &before));
  std::vector<ms_loader_t*> loaders;
  for (size_t i = 0; i < kLoaders; i++) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    loaders.push_back(l);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, kKlassBytes), nullptr);
    for (size_t b = 0; b < kNonClassBlocks; b++) {
      ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, kNonClassBytes), nullptr);
    }
  }
  ASSERT_MS_OK(ms_verify(ms_));
  ms_stats_t after;
  ASSERT_MS_OK(ms_get_stats(ms_, &after));
  const size_t live = kKlassBytes + kNonClassBlocks * (kNonClassBytes + 4);  // 8-byte rounding
  EXPECT_EQ(after.total.used_bytes - before.total.used_bytes, kLoaders * live);
  // committed includes the bookkeeping (overhead).
  const size_t per_loader = (after.total.committed_bytes - before.total.committed_bytes) / kLoaders;
  EXPECT_LE(per_loader, 4096 + kKlassBytes + 800) << "footprint per loader for " << live << " live";
  const size_t overhead = (after.total.overhead_bytes - before.total.overhead_bytes) / kLoaders;
  // Measured 696: slab pages hold 28 loader objects or 10 arenas each, and the pool's chunk
  // headers are shared by ~7 Klasses. 791 since the chunk start table's pages count as overhead
  // too (8 bytes of slots per KiB of chunk, counted by the page: 95 bytes per loader here).
  EXPECT_LE(overhead, 144u + 384 + 96 + 96 + 128)
      << "bookkeeping per loader (slab page slack included)";
  for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(LoaderTest, FastPathOnlyWhereItMayServe) {
  ms_loader_t* plain = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_loader_t* shared = ms_loader_create(ms_, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  for (ms_loader_t* l : {plain, shared}) {
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
    // Klasses come from the micro pool (slow path, no class window) until the loader graduates:
    // past the pool's 8 KiB per loader (13 Klasses of 600 bytes fit, the 14th does not).
    for (int i = 0; i < 13; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
    EXPECT_EQ(stats(l).chunks[MS_SPACE_CLASS], 0u);
    EXPECT_EQ(window(l, MS_SPACE_CLASS).top, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
    EXPECT_EQ(stats(l).chunks[MS_SPACE_CLASS], 1u);
  }
  EXPECT_NE(window(plain, MS_SPACE_NONCLASS).top, nullptr);
  EXPECT_NE(window(plain, MS_SPACE_CLASS).top, nullptr);
  // A shared loader's public windows stay closed: its threads bump in windows of their own.
  EXPECT_EQ(window(shared, MS_SPACE_NONCLASS).top, nullptr);
  EXPECT_EQ(window(shared, MS_SPACE_CLASS).top, nullptr);
  // A bump on the window counts nothing (allocations are not counted by default).
  ASSERT_NE(ms_allocate(plain, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(stats(plain).allocations, 0u);
  EXPECT_EQ(stats(plain).allocations_counted, 0);
  EXPECT_EQ(window(plain, MS_SPACE_NONCLASS).spare, 0u);
  ASSERT_MS_OK(ms_verify(ms_));
}

// A shared loader's threads find their windows by the key in its head (ms__bump.spare), and only
// a shared loader's key is read: an executable built against an older header may write that word
// on any loader whose inline paths bump, with any value, even a live shared loader's key.
TEST_F(LoaderTest, OnlyASharedLoadersHeadNamesItsWindows) {
  ms_loader_t* shared = ms_loader_create(ms_, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  char* first = static_cast<char*>(ms_allocate(shared, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(ms_allocate(shared, MS_SPACE_NONCLASS, 64), first + 64) << "bumps in its window";
  uint64_t key = window(shared, MS_SPACE_NONCLASS).spare;
  EXPECT_NE(key, 0u);
  EXPECT_EQ(window(shared, MS_SPACE_CLASS).spare, 0u);
  // ms_verify checks the head's copy against the windows' key.
  const_cast<ms__bump&>(window(shared, MS_SPACE_NONCLASS)).spare = key + 2;
  EXPECT_EQ(ms_verify(ms_), MS_ERR_CORRUPTED);
  EXPECT_NE(std::strstr(ms_last_error_text(), "key"), nullptr) << ms_last_error_text();
  const_cast<ms__bump&>(window(shared, MS_SPACE_NONCLASS)).spare = key;
  ASSERT_MS_OK(ms_verify(ms_));

  // A plain loader whose word an older executable set to the shared loader's key.
  ms_loader_t* plain = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(plain, MS_SPACE_NONCLASS, 64), nullptr);
  const_cast<ms__bump&>(window(plain, MS_SPACE_NONCLASS)).spare = key;
  void* p = ms_allocate_slow(plain, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, first + 128) << "took a block from the shared loader's window";
  EXPECT_EQ(ms_allocate(shared, MS_SPACE_NONCLASS, 64), first + 128) << "its window is intact";
  ASSERT_MS_OK(ms_verify(ms_));

  // A dead loader's object is reused at once (dead_handles.hpp): a shared loader made in an object
  // whose former life left the word set starts with its own key, or none (a micro loader has no
  // windows), never the leftover (the object is made anew: its constructor clears the head).
  ASSERT_MS_OK(ms_loader_destroy(plain));
  ms_loader_t* reborn = ms_loader_create(ms_, MS_LOADER_MICRO, MS_LOADER_SHARED);
  ASSERT_EQ(ms__head_of(reborn), ms__head_of(plain)) << "the object was not reused";
  EXPECT_EQ(window(reborn, MS_SPACE_NONCLASS).spare, 0u);
  p = ms_allocate(reborn, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, first + 192) << "took a block from the shared loader's window";
  EXPECT_EQ(ms_allocate(shared, MS_SPACE_NONCLASS, 64), first + 192) << "its window is intact";
  ASSERT_MS_OK(ms_verify(ms_));
  ASSERT_MS_OK(ms_loader_destroy(reborn));
  reborn = ms_loader_create(ms_, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_EQ(ms__head_of(reborn), ms__head_of(plain)) << "the object was not reused";
  uint64_t reborn_key = window(reborn, MS_SPACE_NONCLASS).spare;
  EXPECT_NE(reborn_key, key);
  EXPECT_NE(reborn_key, 0u);
  char* q = static_cast<char*>(ms_allocate(reborn, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(ms_allocate(reborn, MS_SPACE_NONCLASS, 64), q + 64);
  ASSERT_MS_OK(ms_verify(ms_));

  // Dead, its word is 0 and its handle fails.
  ASSERT_MS_OK(ms_loader_destroy(shared));
  EXPECT_EQ(window(shared, MS_SPACE_NONCLASS).spare, 0u);
  EXPECT_EQ(ms_allocate(shared, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED);
  ASSERT_MS_OK(ms_verify(ms_));
}

// A loader whose public windows never open (shared; checked mode) keeps the head's fit_max at 0
// however large its free blocks: the inline ms_allocate tests fit_max first, and a value amid the
// size mix there was a branch the CPU missed (arena.hpp). Its freed blocks are still found: best
// fit, at the next window.
TEST_F(LoaderTest, AWindowThatNeverOpensKeepsFitMaxAtZeroAndStillReusesFreedBlocks) {
  ms_settings_t checked_settings;
  ms_settings_init(&checked_settings);
  checked_settings.checked = 1;
  ms_metaspace_t* checked_ms = ms_create(&checked_settings);
  ASSERT_NE(checked_ms, nullptr) << ms_last_error_text();
  struct Case {
    const char* what;
    ms_metaspace_t* ms;
    unsigned flags;
  };
  for (const Case& c : {Case{"shared", ms_, MS_LOADER_SHARED}, Case{"checked", checked_ms, 0u}}) {
    ms_loader_t* l = ms_loader_create(c.ms, MS_LOADER_STANDARD, c.flags);
    ASSERT_NE(l, nullptr) << c.what;
    std::vector<void*> blocks;
    for (size_t i = 0; i < 64; i++) {
      void* p = ms_allocate(l, MS_SPACE_NONCLASS, 8 * (1 + i % 40));
      ASSERT_NE(p, nullptr) << c.what << " " << ms_last_error_text();
      blocks.push_back(p);
    }
    // A large block and a Klass freed in the middle: free blocks of 2 000 and 600 bytes.
    void* big = ms_allocate(l, MS_SPACE_NONCLASS, 2000);
    void* klass = ms_allocate(l, MS_SPACE_CLASS, 600);
    ASSERT_NE(big, nullptr);
    ASSERT_NE(klass, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
    ASSERT_MS_OK(ms_deallocate(l, big, 2000));
    ASSERT_MS_OK(ms_deallocate(l, klass, 600));
    for (size_t i = 0; i < blocks.size(); i += 3) {
      ASSERT_MS_OK(ms_deallocate(l, blocks[i], 8 * (1 + i % 40)));
    }
    const ms__loader_head& h = *ms__head_of(l);
    EXPECT_EQ(h.bump[MS_SPACE_NONCLASS].top, h.bump[MS_SPACE_NONCLASS].end) << c.what;
    EXPECT_EQ(h.fit_max[MS_SPACE_NONCLASS], 0u) << c.what;
    EXPECT_EQ(h.fit_max[MS_SPACE_CLASS], 0u) << c.what;
    ASSERT_MS_OK(ms_verify(c.ms));
    // The freed 2 000 bytes serve a request they hold (best fit, Arena::fit_max computed for
    // such an arena): checked mode at once, a shared loader's thread when its window runs out
    // and it takes the next one (shared_windows.hpp).
    EXPECT_GE(stats(l).free_blocks_bytes[MS_SPACE_NONCLASS], 2000u) << c.what;
    size_t tries = 0;
    for (; tries < 200; tries++) {
      char* again = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 1500));
      ASSERT_NE(again, nullptr) << c.what;
      if (again >= big && again < static_cast<char*>(big) + 2000) break;
    }
    EXPECT_LT(tries, c.flags == 0 ? 1u : 200u) << c.what << ": the freed block was not reused";
    EXPECT_EQ(h.fit_max[MS_SPACE_NONCLASS], 0u) << c.what;
    ASSERT_MS_OK(ms_verify(c.ms));
    ASSERT_MS_OK(ms_loader_destroy(l));
  }
  ms_destroy(checked_ms);
}

// A class alignment above 8 takes the class window away (the inline path rounds to 8 only);
// non-class keeps it.
TEST_F(LoaderTest, AlignedClassesHaveNoClassWindow) {
  open(256);
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  for (int i = 0; i < 10; i++) {
    char* k = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 300 + 8 * i));
    ASSERT_NE(k, nullptr);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(k) % 256, 0u);
    EXPECT_EQ(window(l, MS_SPACE_CLASS).top, nullptr);
  }
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(LoaderTest, FreedClassBlockHoldsAClassAgain) {
  open(1024);
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  char* k1 = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 900));
  char* k2 = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 900));
  ASSERT_NE(k1, nullptr);
  ASSERT_NE(k2, nullptr);
  ASSERT_MS_OK(ms_deallocate(l, k1, 900));
  ASSERT_MS_OK(ms_verify(ms_));
  char* k3 = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 800));
  EXPECT_EQ(k3, k1);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(LoaderTest, UsedBytesAreExact) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  std::mt19937 rng(3);
  size_t used[2] = {};
  std::vector<std::pair<void*, size_t>> blocks;
  for (int i = 0; i < 3000; i++) {
    ms_space_t space = i % 40 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    size_t n = space == MS_SPACE_CLASS ? 500 + rng() % 500 : 1 + rng() % 300;
    void* p = ms_allocate(l, space, n);
    ASSERT_NE(p, nullptr);
    used[space] += (n + 7) & ~size_t{7};
    if (space == MS_SPACE_NONCLASS) blocks.push_back({p, n});
  }
  ms_loader_stats_t ls = stats(l);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], used[MS_SPACE_NONCLASS]);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_CLASS], used[MS_SPACE_CLASS]);
  for (size_t i = 0; i < blocks.size(); i += 7) {
    ASSERT_MS_OK(ms_deallocate(l, blocks[i].first, blocks[i].second));
    used[MS_SPACE_NONCLASS] -= (blocks[i].second + 7) & ~size_t{7};
  }
  ls = stats(l);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS], used[MS_SPACE_NONCLASS]);
  EXPECT_GE(ls.committed_bytes[MS_SPACE_NONCLASS],
            ls.used_bytes[MS_SPACE_NONCLASS] + ls.free_blocks_bytes[MS_SPACE_NONCLASS]);
  ASSERT_MS_OK(ms_verify(ms_));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.used_bytes, used[0] + used[1]);
  ASSERT_MS_OK(ms_loader_destroy(l));
  ms_purge(ms_);  // the micro pool's current class chunk, which held the first Klasses
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.used_bytes, 0u);
  EXPECT_EQ(st.total.chunks_in_use, 1u) << "only the class space guard stays in use";
  ASSERT_MS_OK(ms_verify(ms_));
}

}  // namespace
