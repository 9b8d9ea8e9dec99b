// FreeBlocks: best fit over bins and tree together, and the byte count of blocks that lie in a
// foreign range (class-space gaps held by a non-class arena). What it shares with BinList and
// BlockTree is in free_block_structures_test.cpp.
#include "arena/free_blocks.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "unit/arena/free_block_slots.hpp"

namespace metaspace {
namespace {

struct Memory {
  explicit Memory(size_t words) : words(words) {}
  char* at(size_t byte_offset) { return reinterpret_cast<char*>(words.data()) + byte_offset; }
  std::vector<uint64_t> words;
};

TEST(FreeBlocks, SmallRequestTakesTreeBlockWhenNoBinFits) {
  Memory m(1024);
  FreeBlocks fb;
  fb.add(m.at(0), 16);        // 2 words: bin
  fb.add(m.at(64), 100 * 8);  // 100 words: tree
  ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.count(), 2u);
  EXPECT_EQ(fb.bytes(), 816u);
  EXPECT_EQ(fb.largest_bytes(), 800u);
  size_t got = 0;
  // 10 words is a bin size, but no bin holds a block ≥ 10 words: the tree block serves it.
  EXPECT_EQ(fb.take(80, &got), m.at(64));
  EXPECT_EQ(got, 800u);
  ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.take(16, &got), m.at(0));
  EXPECT_EQ(got, 16u);
  EXPECT_TRUE(fb.empty());
  ASSERT_VERIFIED(fb);
}

TEST(FreeBlocks, BinPreferredOverTreeWhenItFits) {
  Memory m(1024);
  FreeBlocks fb;
  fb.add(m.at(0), 33 * 8);   // smallest tree size
  fb.add(m.at(512), 32 * 8);  // largest bin size
  size_t got = 0;
  EXPECT_EQ(fb.take(8, &got), m.at(512));
  EXPECT_EQ(got, 256u);
  ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.take(8, &got), m.at(0));
  EXPECT_EQ(got, 264u);
  ASSERT_VERIFIED(fb);
}

TEST(FreeBlocks, LargeRequestNeverTakesSmallerBlock) {
  Memory m(1024);
  FreeBlocks fb;
  fb.add(m.at(0), 256);
  fb.add(m.at(1024), 400);
  size_t got = 0;
  EXPECT_EQ(fb.take(408, &got), nullptr);
  EXPECT_EQ(fb.count(), 2u);
  EXPECT_EQ(fb.take(264, &got), m.at(1024));
  EXPECT_EQ(got, 400u);
  ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.largest_bytes(), 256u);  // only bins left: found by scanning them
}

TEST(FreeBlocks, ForeignRangeBytesCounted) {
  Memory m(2048);
  FreeBlocks fb;
  fb.set_foreign_range(m.at(8192), m.at(16384));
  fb.add(m.at(0), 64);        // home, bin
  fb.add(m.at(8192), 64);     // foreign, bin
  fb.add(m.at(9000), 400);    // foreign, tree
  fb.add(m.at(16384 - 8), 8);  // last word of the foreign range
  fb.add(m.at(4096), 400);    // home, tree
  ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.foreign_bytes(), 64u + 400u + 8u);
  EXPECT_EQ(fb.bytes(), 64u + 64u + 400u + 8u + 400u);
  size_t got = 0;
  // Two 400-byte blocks: whichever comes out, the foreign counter must follow it.
  char* p = static_cast<char*>(fb.take(400, &got));
  ASSERT_NE(p, nullptr);
  bool was_foreign = p >= m.at(8192) && p < m.at(16384);
  EXPECT_EQ(fb.foreign_bytes(), was_foreign ? 72u : 472u);
  ASSERT_VERIFIED(fb);
  while (fb.take(8, &got) != nullptr) ASSERT_VERIFIED(fb);
  EXPECT_EQ(fb.foreign_bytes(), 0u);
  EXPECT_EQ(fb.bytes(), 0u);
  ASSERT_VERIFIED(fb);
}

}  // namespace
}  // namespace metaspace
