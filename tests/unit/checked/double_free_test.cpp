// Checked mode recognises a second deallocation of a block by its fence, which the first one
// flipped to the "freed" canary, and refuses it without filing the block twice.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <string>

#include "unit/checked/checked_fixture.hpp"

namespace metaspace::test {
namespace {

TEST(DoubleFree, IsRefused) {
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    ms_metaspace_t* ms = create_checked();
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    void* keep = ms_allocate(l, space, 64);
    void* p = ms_allocate(l, space, 200);
    ASSERT_NE(p, nullptr) << last_error();
    ASSERT_NE(keep, nullptr);
    ASSERT_EQ(ms_deallocate(l, p, 200), MS_OK) << last_error();
    EXPECT_EQ(ms_deallocate(l, p, 200), MS_ERR_DOUBLE_FREE);
    std::string text = last_error();
    EXPECT_NE(text.find(ptr(p)), std::string::npos) << text;
    EXPECT_NE(text.find("freed twice"), std::string::npos) << text;
    // Filed once: one free block of 200 bytes, and everything else is consistent.
    ms_loader_stats_t ls;
    ASSERT_EQ(ms_loader_get_stats(l, &ls), MS_OK);
    EXPECT_EQ(ls.free_blocks_count[space], 1u);
    EXPECT_EQ(ls.free_blocks_bytes[space], 200u);
    EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
    EXPECT_EQ(ms_loader_destroy(l), MS_OK) << last_error();
    ms_destroy(ms);
  }
}

TEST(DoubleFree, ForeignPointerIsNotOwned) {
  ms_metaspace_t* ms = create_checked();
  ms_loader_t* a = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_loader_t* b = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* p = ms_allocate(a, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(ms_allocate(b, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_deallocate(b, p, 64), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_deallocate(a, p, 64), MS_OK) << last_error();
  EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
