#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

TEST(Api, AllocateWriteDestroy) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  std::vector<std::pair<char*, size_t>> blocks;
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; i++) {
    size_t n = 1 + rng() % 300;
    ms_space_t sp = (i % 40 == 0) ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    if (sp == MS_SPACE_CLASS) n = 528 + rng() % 400;
    char* p = static_cast<char*>(ms_allocate(l, sp, n));
    ASSERT_NE(p, nullptr) << ms_last_error_text();
    std::memset(p, i & 0xff, n);
    blocks.push_back({p, n});
    if (i % 997 == 0) ASSERT_EQ(ms_deallocate(l, p, n), MS_OK) << ms_last_error_text();
  }
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
  // What stays is bookkeeping: the dead loader's object (quarantined) and spare chunk headers.
  EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes);
  EXPECT_LE(st.total.overhead_bytes, 8 * 4096u);
  ms_destroy(ms);
}

}  // namespace
