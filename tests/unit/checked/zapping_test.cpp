// Checked mode zaps freed blocks with 0xF3, so a runtime that still reads a block it freed sees
// a recognisable pattern rather than its old data.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>

#include "unit/checked/checked_fixture.hpp"

namespace metaspace::test {
namespace {

// The free block lists keep their links in the block: one word for small blocks, a tree node
// (seven words) for blocks above 32 words. The rest of the block must be the pattern.
void expect_zapped(const unsigned char* p, size_t bytes, size_t link_bytes) {
  size_t bad = 0;
  for (size_t i = link_bytes; i < bytes; i++) bad += p[i] != 0xF3;
  EXPECT_EQ(bad, 0u) << "of " << bytes - link_bytes << " bytes past the free-list link";
}

TEST(Zapping, FreedBlocksReadF3BeforeReuse) {
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    ms_metaspace_t* ms = create_checked();
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    auto* small = static_cast<unsigned char*>(ms_allocate(l, space, 200));
    auto* large = static_cast<unsigned char*>(ms_allocate(l, space, 2000));
    ASSERT_NE(small, nullptr);
    ASSERT_NE(large, nullptr);
    std::memset(small, 0x11, 200);
    std::memset(large, 0x22, 2000);
    ASSERT_EQ(ms_deallocate(l, small, 200), MS_OK) << last_error();
    ASSERT_EQ(ms_deallocate(l, large, 2000), MS_OK) << last_error();
    expect_zapped(small, 200, 8);
    expect_zapped(large, 2000, 7 * 8);
    EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
    ms_destroy(ms);
  }
}

TEST(Zapping, OffWhenNotChecked) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  auto* p = static_cast<unsigned char*>(ms_allocate(l, MS_SPACE_NONCLASS, 200));
  std::memset(p, 0x11, 200);
  ASSERT_EQ(ms_deallocate(l, p, 200), MS_OK);
  EXPECT_EQ(p[100], 0x11);
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
