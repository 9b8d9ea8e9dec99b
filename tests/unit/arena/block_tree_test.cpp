// BlockTree: the AVL tree of larger free blocks. What it shares with BinList and FreeBlocks (best
// fit, same-size blocks, counters, the random model) is in free_block_structures_test.cpp; here
// what only the tree does: balance, and catching a node overwritten by a stray write.
#include "arena/block_tree.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

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

// Checked mode's peek_checked() guards take(): for every node and every word of its header a
// stray write (a link to unmapped memory, a broken canary, size or height) must either make
// peek_checked() refuse, or leave everything take() then reads intact. A take() it let through
// onto a smashed link would dereference address 0x40 and crash the test. Returns how many
// (node, word, request) cases were refused and how many taken.
std::pair<size_t, size_t> smash_every_header_word(const std::vector<size_t>& sizes) {
  constexpr size_t kWordsPerSlot = 96;
  size_t refused = 0, taken = 0;
  for (size_t victim = 0; victim < sizes.size(); victim++) {
    for (size_t field = 0; field < BlockTree::kNodeBytes / 8; field++) {
      for (size_t want = BlockTree::kMinWords; want <= 87; want += 2) {
        BlockSlots slots(sizes.size(), kWordsPerSlot);
        BlockTree tree;
        for (size_t i = 0; i < sizes.size(); i++) tree.add(slots.at(i), sizes[i]);
        EXPECT_TRUE(tree.verify()) << ms_last_error_text();
        const char* range[2] = {reinterpret_cast<const char*>(slots.words.data()),
                                reinterpret_cast<const char*>(slots.words.data() +
                                                              slots.words.size())};
        BlockBounds bounds{[](const void* owner, const void* p, size_t bytes) {
                             auto* r = static_cast<const char* const*>(owner);
                             auto* b = static_cast<const char*>(p);
                             return b >= r[0] && b < r[1] && bytes <= static_cast<size_t>(r[1] - b);
                           },
                           range};
        uint64_t* word = static_cast<uint64_t*>(slots.at(victim)) + field;
        // Links (words 2..4) to unmapped memory; canary, size and the height word to garbage.
        *word = field >= 2 && field <= 4 ? 0x40 : 0xABABABABABABABABull;
        const void* block = nullptr;
        size_t got = 0;
        unsigned tag = 0;
        if (!tree.peek_checked(want, bounds, &block, &got, &tag)) {
          refused++;
          continue;
        }
        size_t took = 0;
        void* p = tree.take(want, &took);
        EXPECT_EQ(p, block) << "victim " << victim << " field " << field << " want " << want;
        if (p != nullptr) EXPECT_EQ(took, got);
        taken++;
      }
    }
  }
  return {refused, taken};
}

TEST(BlockTree, PeekCheckedRefusesEveryOverwriteTakeWouldMeet) {
  // Hand-picked: repeated sizes (list members) and a double rotation on removal (which reads
  // the heights of a node's great-grandchildren: checking two levels crashed here).
  std::vector<size_t> picked = {40, 20, 60, 10, 30, 50, 70, 8,  15, 25, 35, 45,
                                55, 65, 75, 9,  12, 40, 60, 60, 33, 47, 70, 80};
  // 64 blocks of 7..86 words in a fixed pseudo-random order, a tree six levels high.
  std::vector<size_t> shuffled;
  for (size_t i = 0, x = 12345; i < 64; i++) {
    x = x * 1103515245 + 12345;
    shuffled.push_back(BlockTree::kMinWords + (x >> 16) % 80);
  }
  for (const auto& sizes : {picked, shuffled}) {
    auto [refused, taken] = smash_every_header_word(sizes);
    // Both outcomes occur: a write off take()'s path is no reason to refuse.
    EXPECT_GT(refused, 0u);
    EXPECT_GT(taken, 0u);
  }
}

}  // namespace
}  // namespace metaspace
