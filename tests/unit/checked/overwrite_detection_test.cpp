// One word written past a block is caught on each path that checks fences — ms_verify,
// ms_deallocate of the block, ms_loader_destroy — with MS_ERR_OVERWRITE and a text naming the
// block's address and size and the expected and found canary. For non-class blocks, class blocks
// at 8 and 1 KiB alignment, and non-class blocks placed in a class alignment gap.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <string>

#include "unit/checked/checked_fixture.hpp"

namespace metaspace::test {
namespace {

constexpr uint64_t kStray = 0x4141414141414141ull;

enum class Where { kNonClass, kClass, kClassAligned, kNonClassInClassGap };

struct Victim {
  ms_metaspace_t* ms;
  ms_loader_t* loader;
  char* block;
  size_t bytes;
};

// A loader with some neighbours around the block, so the fence is found among others.
Victim make_victim(Where where) {
  size_t alignment = where == Where::kClassAligned || where == Where::kNonClassInClassGap ? 1024 : 8;
  ms_metaspace_t* ms = create_checked(MS_RECLAIM_BALANCED, alignment);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  EXPECT_NE(l, nullptr) << last_error();
  for (int i = 0; i < 20; i++) {
    EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 40 + i * 8), nullptr);
  }
  Victim v{ms, l, nullptr, 0};
  switch (where) {
    case Where::kNonClass:
      v.bytes = 100;  // not a multiple of 8: the fence sits behind the rounded size
      v.block = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, v.bytes));
      break;
    case Where::kClass:
    case Where::kClassAligned:
      v.bytes = 600;
      v.block = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, v.bytes));
      break;
    case Where::kNonClassInClassGap:
      // A 600-byte class block at 1 KiB alignment leaves a gap of 400 bytes behind its fence,
      // which the non-class arena takes first.
      EXPECT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
      v.bytes = 96;
      v.block = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, v.bytes));
      EXPECT_TRUE(ms_is_class_space(ms, v.block)) << "the block did not come from the gap";
      break;
  }
  EXPECT_NE(v.block, nullptr) << last_error();
  for (int i = 0; i < 20; i++) {
    EXPECT_NE(ms_allocate(l, i % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, 48 + i * 16), nullptr);
  }
  EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
  return v;
}

// Writes one word just past the block (its size rounded to 8) and returns that word's address.
void overrun(const Victim& v) {
  size_t n = (v.bytes + 7) & ~size_t{7};
  std::memset(v.block, 0x77, v.bytes);
  std::memcpy(v.block + n, &kStray, sizeof kStray);
}

void expect_names_the_block(const Victim& v, const std::string& text) {
  size_t n = (v.bytes + 7) & ~size_t{7};
  EXPECT_NE(text.find("block " + ptr(v.block) + " (" + std::to_string(n) + " bytes)"),
            std::string::npos) << text;
  EXPECT_NE(text.find("expected canary " + hex(live_canary(v.block, v.bytes))), std::string::npos)
      << text;
  EXPECT_NE(text.find("found " + hex(kStray)), std::string::npos) << text;
}

class OverwriteDetection : public ::testing::TestWithParam<Where> {};

TEST_P(OverwriteDetection, ByVerify) {
  Victim v = make_victim(GetParam());
  overrun(v);
  EXPECT_EQ(ms_verify(v.ms), MS_ERR_OVERWRITE);
  expect_names_the_block(v, last_error());
  // Destruction reports it again and still frees everything.
  EXPECT_EQ(ms_loader_destroy(v.loader), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_verify(v.ms), MS_OK) << last_error();
  ms_destroy(v.ms);
}

TEST_P(OverwriteDetection, ByDeallocate) {
  Victim v = make_victim(GetParam());
  overrun(v);
  EXPECT_EQ(ms_deallocate(v.loader, v.block, v.bytes), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_last_error(), MS_ERR_OVERWRITE);
  expect_names_the_block(v, last_error());
  // The block was not filed for reuse: the broken fence is still there to be reported.
  EXPECT_EQ(ms_verify(v.ms), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_loader_destroy(v.loader), MS_ERR_OVERWRITE);
  ms_destroy(v.ms);
}

TEST_P(OverwriteDetection, ByLoaderDestroy) {
  Victim v = make_victim(GetParam());
  overrun(v);
  EXPECT_EQ(ms_loader_destroy(v.loader), MS_ERR_OVERWRITE);
  expect_names_the_block(v, last_error());
  // The loader is gone all the same: its memory went back, later calls are refused.
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(v.ms, &st), MS_OK);
  EXPECT_EQ(st.loaders, 0u);
  EXPECT_EQ(st.total.used_bytes, 0u);
  EXPECT_EQ(ms_allocate(v.loader, MS_SPACE_NONCLASS, 8), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_verify(v.ms), MS_OK) << last_error();
  ms_destroy(v.ms);
}

TEST_P(OverwriteDetection, IntactBlocksPassEveryPath) {
  Victim v = make_victim(GetParam());
  std::memset(v.block, 0x77, v.bytes);  // writing the whole block is fine
  EXPECT_EQ(ms_verify(v.ms), MS_OK) << last_error();
  EXPECT_EQ(ms_deallocate(v.loader, v.block, v.bytes), MS_OK) << last_error();
  EXPECT_EQ(ms_verify(v.ms), MS_OK) << last_error();
  EXPECT_EQ(ms_loader_destroy(v.loader), MS_OK) << last_error();
  ms_destroy(v.ms);
}

std::string where_name(const ::testing::TestParamInfo<Where>& info) {
  switch (info.param) {
    case Where::kNonClass: return "NonClass";
    case Where::kClass: return "Class";
    case Where::kClassAligned: return "ClassAlign1024";
    case Where::kNonClassInClassGap: return "NonClassInClassGap";
  }
  return "?";
}

INSTANTIATE_TEST_SUITE_P(Blocks, OverwriteDetection,
                         ::testing::Values(Where::kNonClass, Where::kClass, Where::kClassAligned,
                                           Where::kNonClassInClassGap),
                         where_name);

}  // namespace
}  // namespace metaspace::test
