// A loader metaspace: the loader kind picks both growth policies, the fast path is on only
// where it may serve, freed class blocks hold classes again, and the per-loader statistics are
// exact.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

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
  return reinterpret_cast<const ms__loader_head*>(l)->bump[space];
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
  // Micro loaders own no chunks: see MicroLoaderStaysTiny and micro_pool_test.cpp.
  for (const Case& c : {Case{MS_LOADER_BOOT, 4 * MiB, 256 * KiB},
                        Case{MS_LOADER_STANDARD, 4 * KiB, 2 * KiB}}) {
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

TEST_F(LoaderTest, FastPathOnlyWhereItMayServe) {
  ms_loader_t* plain = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_loader_t* shared = ms_loader_create(ms_, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  for (ms_loader_t* l : {plain, shared}) {
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
  }
  EXPECT_NE(window(plain, MS_SPACE_NONCLASS).top, nullptr);
  EXPECT_NE(window(plain, MS_SPACE_CLASS).top, nullptr);
  // Calls on a shared loader all take its lock: no window to bump without it.
  EXPECT_EQ(window(shared, MS_SPACE_NONCLASS).top, nullptr);
  EXPECT_EQ(window(shared, MS_SPACE_CLASS).top, nullptr);
  // A bump on the window is counted as an allocation.
  uint64_t before = stats(plain).allocations;
  ASSERT_NE(ms_allocate(plain, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(stats(plain).allocations, before + 1);
  ASSERT_MS_OK(ms_verify(ms_));
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
  EXPECT_EQ(ls.allocations, 3000u);
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
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.total.used_bytes, 0u);
  EXPECT_EQ(st.total.chunks_in_use, 1u) << "only the class space guard stays in use";
  ASSERT_MS_OK(ms_verify(ms_));
}

}  // namespace
