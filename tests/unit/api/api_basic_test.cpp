#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

// A byte pattern of each block's own: two blocks that share a byte leave the later one's pattern
// in it, and the earlier block no longer reads back.
unsigned char pattern(uint32_t block, size_t offset) {
  return static_cast<unsigned char>((block * 2654435761u + static_cast<uint32_t>(offset)) >> 24);
}

struct Block {
  char* p;
  size_t bytes;
  uint32_t id;
  bool live;
};

// Every live block still holds its pattern, and no two live blocks share an address.
::testing::AssertionResult blocks_intact(std::vector<Block> blocks) {
  for (const Block& b : blocks) {
    if (!b.live) continue;
    for (size_t k = 0; k < b.bytes; k++) {
      if (static_cast<unsigned char>(b.p[k]) != pattern(b.id, k)) {
        return ::testing::AssertionFailure() << "block " << b.id << " (" << b.bytes
                                             << " bytes) overwritten at offset " << k;
      }
    }
  }
  std::erase_if(blocks, [](const Block& b) { return !b.live; });
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.p < b.p; });
  for (size_t i = 1; i < blocks.size(); i++) {
    if (blocks[i - 1].p + blocks[i - 1].bytes > blocks[i].p) {
      return ::testing::AssertionFailure() << "blocks " << blocks[i - 1].id << " and "
                                           << blocks[i].id << " overlap";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(Api, AllocateWriteDestroy) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  std::vector<Block> blocks;
  std::mt19937 rng(1);
  for (uint32_t i = 0; i < 20000; i++) {
    size_t n = 1 + rng() % 300;
    ms_space_t sp = (i % 40 == 0) ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    if (sp == MS_SPACE_CLASS) n = 528 + rng() % 400;
    char* p = static_cast<char*>(ms_allocate(l, sp, n));
    ASSERT_NE(p, nullptr) << ms_last_error_text();
    for (size_t k = 0; k < n; k++) p[k] = static_cast<char>(pattern(i, k));
    blocks.push_back({p, n, i, true});
    // Freed blocks are reused by later requests: only live blocks must read back.
    if (i % 997 == 0) {
      ASSERT_EQ(ms_deallocate(l, p, n), MS_OK) << ms_last_error_text();
      blocks.back().live = false;
    }
  }
  EXPECT_TRUE(blocks_intact(blocks));
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_GT(st.total.used_bytes, 0u);
  EXPECT_GE(st.total.committed_bytes, st.total.used_bytes);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.total.used_bytes, 0u);
  // What stays is bookkeeping: the dead loader's handle (remembered) and spare chunk headers
  // (slabs: 8 pages), and the class space's own: the header pages of its commit mask, area flags
  // and table page counts written so far (3), the chunk start pages of its guard chunk's split
  // (4), the two node maps' tables (1 each). Measured 17 pages.
  EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes);
  EXPECT_LE(st.total.overhead_bytes, 17 * 4096u);
  ms_destroy(ms);
}

}  // namespace
