// BlockTree: the AVL tree of larger free blocks. What it shares with BinList and FreeBlocks (best
// fit, same-size blocks, counters, the random model) is in free_block_structures_test.cpp; here
// what only the tree does: balance, and catching a node overwritten by a stray write.
#include "arena/block_tree.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "unit/arena/free_block_slots.hpp"

namespace metaspace {
namespace {

using test::BlockSlots;

// Ascending inserts are the classic worst case for an unbalanced tree.
TEST(BlockTree, AscendingInsertsStayBalanced) {
  constexpr size_t kN = 400;
  BlockSlots slots(kN, 512);
  BlockTree tree;
  for (size_t i = 0; i < kN; i++) {
    tree.add(slots.at(i), BlockTree::kMinWords + i);
    ASSERT_VERIFIED(tree);
  }
  EXPECT_EQ(tree.largest_words(), BlockTree::kMinWords + kN - 1);
  for (size_t i = 0; i < kN; i++) {
    size_t got = 0;
    ASSERT_EQ(tree.take(BlockTree::kMinWords, &got), slots.at(i));
    ASSERT_EQ(got, BlockTree::kMinWords + i);
    ASSERT_VERIFIED(tree);
  }
}

TEST(BlockTree, VerifyNoticesOverwrittenNode) {
  BlockSlots slots(3, 512);
  BlockTree tree;
  tree.add(slots.at(0), 40);
  tree.add(slots.at(1), 50);
  tree.add(slots.at(2), 60);
  ASSERT_VERIFIED(tree);
  uint64_t saved;
  std::memcpy(&saved, slots.at(1), sizeof saved);
  std::memset(slots.at(1), 0xAB, sizeof saved);  // a stray write over the first word
  EXPECT_FALSE(tree.verify());
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
  EXPECT_NE(std::strstr(ms_last_error_text(), "overwritten"), nullptr) << ms_last_error_text();
  std::memcpy(slots.at(1), &saved, sizeof saved);
  ASSERT_VERIFIED(tree);
}

}  // namespace
}  // namespace metaspace
