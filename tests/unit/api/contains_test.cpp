// ms_contains: every block of either space lies in the metaspace's reserved address space, and
// memory the metaspace did not reserve (the stack, malloc, another metaspace) does not.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdlib>
#include <vector>

namespace {

TEST(Contains, EveryBlockOfEitherSpaceIsInsideAndForeignMemoryIsNot) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ms_metaspace_t* other = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ASSERT_NE(other, nullptr);
  std::vector<void*> blocks;
  for (ms_loader_kind_t kind : {MS_LOADER_BOOT, MS_LOADER_STANDARD, MS_LOADER_MICRO}) {
    ms_loader_t* l = ms_loader_create(ms, kind, 0);
    ASSERT_NE(l, nullptr);
    for (size_t bytes : {8, 64, 600, 4096, 200000}) {
      for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
        void* p = ms_allocate(l, space, bytes);
        ASSERT_NE(p, nullptr);
        blocks.push_back(p);
      }
    }
  }
  for (void* p : blocks) {
    EXPECT_EQ(ms_contains(ms, p), 1) << p;
    EXPECT_EQ(ms_contains(other, p), 0) << p;
  }
  int on_stack = 0;
  void* heap = std::malloc(64);
  EXPECT_EQ(ms_contains(ms, &on_stack), 0);
  EXPECT_EQ(ms_contains(ms, heap), 0);
  EXPECT_EQ(ms_contains(ms, nullptr), 0);
  EXPECT_EQ(ms_contains(nullptr, blocks[0]), 0);
  std::free(heap);
  ms_destroy(other);
  ms_destroy(ms);
}

TEST(Contains, FollowsTheNodesAsTheyAreReservedAndGivenBack) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = MS_RECLAIM_AGGRESSIVE;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* keeper = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_loader_t* dying = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* kept = ms_allocate(keeper, MS_SPACE_NONCLASS, 1024);
  void* freed = ms_allocate(dying, MS_SPACE_NONCLASS, 1024);
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(freed, nullptr);
  ASSERT_EQ(ms_loader_destroy(dying), MS_OK);
  ms_purge(ms);
  // The node still holds the keeper's chunk: the dead loader's address stays reserved.
  EXPECT_EQ(ms_contains(ms, freed), 1);
  ASSERT_EQ(ms_loader_destroy(keeper), MS_OK);
  ms_purge(ms);
  // Nothing in use any more: the node went back to the kernel, and with it the range.
  EXPECT_EQ(ms_contains(ms, kept), 0);
  EXPECT_EQ(ms_contains(ms, freed), 0);
  ms_destroy(ms);
}

}  // namespace
