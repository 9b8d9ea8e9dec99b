// BlockTree: the AVL tree of larger free blocks. Best fit, same-size lists, balance and counters
// are checked against a std::multiset model through thousands of random operations.
#include "arena/block_tree.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/error.hpp"

namespace metaspace {
namespace {

#define ASSERT_VERIFIED(x) ASSERT_TRUE((x).verify()) << ms_last_error_text()

constexpr size_t kMaxTestWords = 512;

// Backing memory: each block gets its own slot large enough for the largest test size.
struct Slots {
  explicit Slots(size_t n) : words(n * kMaxTestWords) {}
  void* at(size_t i) { return &words[i * kMaxTestWords]; }
  std::vector<uint64_t> words;
};

TEST(BlockTree, EmptyTree) {
  BlockTree tree;
  size_t got = 0;
  EXPECT_TRUE(tree.empty());
  EXPECT_EQ(tree.largest_words(), 0u);
  EXPECT_EQ(tree.take(BlockTree::kMinWords, &got), nullptr);
  ASSERT_VERIFIED(tree);
}

TEST(BlockTree, ExactAndBestFit) {
  Slots slots(4);
  BlockTree tree;
  tree.add(slots.at(0), 40);
  tree.add(slots.at(1), 90);
  tree.add(slots.at(2), 35);
  ASSERT_VERIFIED(tree);
  EXPECT_EQ(tree.largest_words(), 90u);
  size_t got = 0;
  EXPECT_EQ(tree.take(40, &got), slots.at(0));  // exact
  EXPECT_EQ(got, 40u);
  ASSERT_VERIFIED(tree);
  EXPECT_EQ(tree.take(36, &got), slots.at(1));  // 35 too small: smallest fit is 90
  EXPECT_EQ(got, 90u);
  ASSERT_VERIFIED(tree);
  EXPECT_EQ(tree.largest_words(), 35u);
  EXPECT_EQ(tree.take(36, &got), nullptr);
  EXPECT_EQ(tree.take(1, &got), slots.at(2));  // small requests are served too
  EXPECT_TRUE(tree.empty());
  ASSERT_VERIFIED(tree);
}

TEST(BlockTree, SameSizeList) {
  Slots slots(5);
  BlockTree tree;
  for (size_t i = 0; i < 4; i++) tree.add(slots.at(i), 50);
  tree.add(slots.at(4), 60);
  EXPECT_EQ(tree.count(), 5u);
  EXPECT_EQ(tree.words(), 260u);
  ASSERT_VERIFIED(tree);
  std::set<void*> seen;
  for (int i = 0; i < 4; i++) {
    size_t got = 0;
    void* p = tree.take(45, &got);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(got, 50u);
    EXPECT_TRUE(seen.insert(p).second) << "block handed out twice";
    ASSERT_VERIFIED(tree);
  }
  size_t got = 0;
  EXPECT_EQ(tree.take(45, &got), slots.at(4));
  EXPECT_EQ(got, 60u);
  EXPECT_TRUE(tree.empty());
  ASSERT_VERIFIED(tree);
}

// Ascending inserts are the classic worst case for an unbalanced tree.
TEST(BlockTree, AscendingInsertsStayBalanced) {
  constexpr size_t kN = 400;
  Slots slots(kN);
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

TEST(BlockTree, RandomInsertTakeAgainstMultiset) {
  constexpr size_t kSlots = 3000;
  Slots slots(kSlots);
  std::vector<size_t> free_slots;
  for (size_t i = kSlots; i-- > 0;) free_slots.push_back(i);
  std::multiset<size_t> model;
  std::map<void*, size_t> size_of;  // blocks in the tree
  std::map<void*, size_t> slot_of;
  BlockTree tree;
  std::mt19937 rng(7);
  size_t model_words = 0;
  for (int op = 0; op < 12000; op++) {
    // Bias towards inserts in the first half so the tree grows deep, then drain it.
    bool insert = !free_slots.empty() && (rng() % 100) < (op < 6000 ? 65u : 35u);
    if (insert) {
      size_t slot = free_slots.back();
      free_slots.pop_back();
      // Few distinct sizes in part of the range, so same-size lists get exercised.
      size_t w = rng() % 3 == 0 ? 33 + rng() % 8 : BlockTree::kMinWords + rng() % 500;
      tree.add(slots.at(slot), w);
      model.insert(w);
      size_of[slots.at(slot)] = w;
      slot_of[slots.at(slot)] = slot;
      model_words += w;
    } else {
      size_t w = 1 + rng() % 520;
      size_t got = 0;
      void* p = tree.take(w, &got);
      auto it = model.lower_bound(w);
      if (it == model.end()) {
        ASSERT_EQ(p, nullptr) << "op " << op;
      } else {
        ASSERT_NE(p, nullptr) << "op " << op;
        ASSERT_EQ(got, *it) << "op " << op << ": not the smallest block >= " << w;
        auto known = size_of.find(p);
        ASSERT_NE(known, size_of.end()) << "handed out a block that is not in the tree";
        ASSERT_EQ(known->second, got);
        size_of.erase(known);
        model.erase(it);
        free_slots.push_back(slot_of[p]);
        model_words -= got;
      }
    }
    ASSERT_EQ(tree.count(), model.size());
    ASSERT_EQ(tree.words(), model_words);
    ASSERT_EQ(tree.largest_words(), model.empty() ? 0 : *model.rbegin());
    ASSERT_VERIFIED(tree);
  }
}

TEST(BlockTree, VerifyNoticesOverwrittenNode) {
  Slots slots(3);
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
