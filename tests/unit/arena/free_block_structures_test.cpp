// What BinList, BlockTree and FreeBlocks promise alike, as one typed suite: best fit (the
// smallest block of at least the requested size), every block handed out once, exact counters
// (count, words, largest), verify() after every step, checked against a model through thousands
// of random operations. What only one of them promises (LIFO bins, a balanced tree, bins and tree
// together, foreign ranges) is in its own test file.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "arena/bin_list.hpp"
#include "arena/block_tree.hpp"
#include "arena/free_blocks.hpp"
#include "arena/medium_bins.hpp"
#include "unit/arena/free_block_slots.hpp"

namespace metaspace {
namespace {

using test::BlockSlots;

// One interface in words over the three structures, and the sizes each one holds.
struct BinListTraits {
  using Structure = BinList;
  static constexpr size_t kMinWords = 1;
  static constexpr size_t kMaxWords = BinList::kMaxWords;
  static constexpr bool kSameSizeLifo = true;  // each bin is a stack
  static void add(BinList& s, void* p, size_t words) { s.add(p, words); }
  static void* take(BinList& s, size_t words, size_t* got) { return s.take(words, got); }
  static size_t words(const BinList& s) { return s.words(); }
  static size_t largest(const BinList& s) { return s.largest_words(); }
};

struct BlockTreeTraits {
  using Structure = BlockTree;
  static constexpr size_t kMinWords = BlockTree::kMinWords;
  static constexpr size_t kMaxWords = 512;
  static constexpr bool kSameSizeLifo = false;
  static void add(BlockTree& s, void* p, size_t words) { s.add(p, words); }
  static void* take(BlockTree& s, size_t words, size_t* got) { return s.take(words, got); }
  static size_t words(const BlockTree& s) { return s.words(); }
  static size_t largest(const BlockTree& s) { return s.largest_words(); }
};

struct MediumBinsTraits {
  using Structure = MediumBins;
  static constexpr size_t kMinWords = MediumBins::kMinWords;
  static constexpr size_t kMaxWords = MediumBins::kMaxWords;
  static constexpr bool kSameSizeLifo = true;  // each bin is a stack
  static void add(MediumBins& s, void* p, size_t words) { s.add(p, words, 0); }
  static void* take(MediumBins& s, size_t words, size_t* got) {
    unsigned tag = 0;
    return s.take(words, got, &tag);
  }
  static size_t words(const MediumBins& s) { return s.words(); }
  static size_t largest(const MediumBins& s) { return s.largest_words(); }
};

// FreeBlocks once an arena gave it medium bins: three structures, disjoint size ranges.
struct FreeBlocksWithMedium : FreeBlocks {
  FreeBlocksWithMedium() { attach_medium(&medium_bins); }
  MediumBins medium_bins;
};

struct FreeBlocksTraits {
  using Structure = FreeBlocks;
  static constexpr size_t kMinWords = 1;
  static constexpr size_t kMaxWords = 512;
  static constexpr bool kSameSizeLifo = false;
  static void add(FreeBlocks& s, void* p, size_t words) { s.add(p, words * 8); }
  static void* take(FreeBlocks& s, size_t words, size_t* got) {
    size_t got_bytes = 0;
    void* p = s.take(words * 8, &got_bytes);
    *got = got_bytes / 8;
    return p;
  }
  static size_t words(const FreeBlocks& s) { return s.bytes() / 8; }
  static size_t largest(const FreeBlocks& s) { return s.largest_bytes() / 8; }
};

// The same operations on FreeBlocks with medium bins attached.
struct FreeBlocksWithMediumTraits : FreeBlocksTraits {
  using Structure = FreeBlocksWithMedium;
};

template <typename Traits>
class FreeBlockStructure : public ::testing::Test {
 protected:
  using Structure = typename Traits::Structure;
  static constexpr size_t kMin = Traits::kMinWords;
  static constexpr size_t kMax = Traits::kMaxWords;

  void add(size_t slot, size_t words) { Traits::add(s_, slots_.at(slot), words); }
  void* take(size_t words, size_t* got) { return Traits::take(s_, words, got); }
  size_t words() const { return Traits::words(s_); }
  size_t largest() const { return Traits::largest(s_); }

  static constexpr size_t kSlots = 1000;
  BlockSlots slots_{kSlots, Traits::kMaxWords};
  Structure s_;
};

using Structures = ::testing::Types<BinListTraits, MediumBinsTraits, BlockTreeTraits,
                                    FreeBlocksTraits, FreeBlocksWithMediumTraits>;

class StructureNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if (std::is_same_v<T, BinListTraits>) return "BinList";
    if (std::is_same_v<T, MediumBinsTraits>) return "MediumBins";
    if (std::is_same_v<T, BlockTreeTraits>) return "BlockTree";
    if (std::is_same_v<T, FreeBlocksWithMediumTraits>) return "FreeBlocksWithMedium";
    return "FreeBlocks";
  }
};

TYPED_TEST_SUITE(FreeBlockStructure, Structures, StructureNames);

TYPED_TEST(FreeBlockStructure, EmptyTakesNothing) {
  size_t got = 0;
  EXPECT_TRUE(this->s_.empty());
  EXPECT_EQ(this->s_.count(), 0u);
  EXPECT_EQ(this->largest(), 0u);
  EXPECT_EQ(this->take(this->kMin, &got), nullptr);
  EXPECT_EQ(this->take(this->kMax, &got), nullptr);
  ASSERT_VERIFIED(this->s_);
}

// Blocks of small, mid (twice) and large size: exact fit, smallest fit, none, and a request below
// the smallest block size served by the smallest block.
TYPED_TEST(FreeBlockStructure, BestFitIsTheSmallestBlockOfAtLeastN) {
  const size_t small = this->kMin + 2;
  const size_t mid = this->kMin + 16;
  const size_t large = this->kMax;
  this->add(0, small);
  this->add(1, mid);
  this->add(2, large);
  this->add(3, mid);
  ASSERT_VERIFIED(this->s_);
  EXPECT_EQ(this->s_.count(), 4u);
  EXPECT_EQ(this->words(), small + 2 * mid + large);
  EXPECT_EQ(this->largest(), large);
  size_t got = 0;
  void* exact = this->take(mid, &got);  // exact
  EXPECT_EQ(got, mid);
  ASSERT_VERIFIED(this->s_);
  void* fit = this->take(small + 1, &got);  // small is too small: the other mid block fits best
  EXPECT_EQ(got, mid);
  EXPECT_EQ((std::set<void*>{exact, fit}), (std::set<void*>{this->slots_.at(1), this->slots_.at(3)}));
  ASSERT_VERIFIED(this->s_);
  EXPECT_EQ(this->take(mid + 1, &got), this->slots_.at(2));
  EXPECT_EQ(got, large);
  EXPECT_EQ(this->largest(), small);
  ASSERT_VERIFIED(this->s_);
  EXPECT_EQ(this->take(small + 1, &got), nullptr);  // only the small block is left
  EXPECT_EQ(this->take(1, &got), this->slots_.at(0));
  EXPECT_EQ(got, small);
  EXPECT_TRUE(this->s_.empty());
  EXPECT_EQ(this->words(), 0u);
  EXPECT_EQ(this->largest(), 0u);
  ASSERT_VERIFIED(this->s_);
}

TYPED_TEST(FreeBlockStructure, SameSizeBlocksAreEachHandedOutOnce) {
  const size_t size = this->kMin + 4;
  for (size_t i = 0; i < 4; i++) this->add(i, size);
  this->add(4, size + 10);
  EXPECT_EQ(this->s_.count(), 5u);
  EXPECT_EQ(this->words(), 5 * size + 10);
  ASSERT_VERIFIED(this->s_);
  std::set<void*> seen;
  for (int i = 0; i < 4; i++) {
    size_t got = 0;
    void* p = this->take(size, &got);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(got, size);
    EXPECT_TRUE(seen.insert(p).second) << "block handed out twice";
    ASSERT_VERIFIED(this->s_);
  }
  size_t got = 0;
  EXPECT_EQ(this->take(size, &got), this->slots_.at(4));
  EXPECT_EQ(got, size + 10);
  EXPECT_TRUE(this->s_.empty());
  ASSERT_VERIFIED(this->s_);
}

// Random adds and takes against a model (size → blocks in the order added). Every answer must be
// a block of the model's smallest size ≥ n (the last one added, where same-size blocks are a
// stack), and the counters must track the model exactly. Adds dominate the first half, so the
// structure grows large (and a tree deep), takes the second; a third of the sizes fall in a
// narrow band so that same-size blocks pile up.
TYPED_TEST(FreeBlockStructure, RandomAddsAndTakesAgainstAModel) {
  constexpr int kOperations = 10000;
  std::vector<size_t> free_slots;
  for (size_t i = this->kSlots; i-- > 0;) free_slots.push_back(i);
  std::map<size_t, std::vector<void*>> model;
  std::map<void*, size_t> slot_of;
  size_t model_count = 0;
  size_t model_words = 0;
  std::mt19937 rng(42);
  for (int op = 0; op < kOperations; op++) {
    bool add = !free_slots.empty() && (rng() % 100) < (op < kOperations / 2 ? 65u : 35u);
    if (add) {
      size_t slot = free_slots.back();
      free_slots.pop_back();
      size_t w = rng() % 3 == 0 ? this->kMin + rng() % 8
                                : this->kMin + rng() % (this->kMax - this->kMin + 1);
      this->add(slot, w);
      model[w].push_back(this->slots_.at(slot));
      slot_of[this->slots_.at(slot)] = slot;
      model_count++;
      model_words += w;
    } else {
      size_t w = 1 + rng() % this->kMax;  // BinList takes no more than its largest bin
      size_t got = 0;
      void* p = this->take(w, &got);
      auto it = model.lower_bound(w);
      if (it == model.end()) {
        ASSERT_EQ(p, nullptr) << "op " << op;
      } else {
        ASSERT_NE(p, nullptr) << "op " << op;
        ASSERT_EQ(got, it->first) << "op " << op << ": not the smallest block >= " << w;
        std::vector<void*>& same = it->second;
        if (TypeParam::kSameSizeLifo) ASSERT_EQ(p, same.back()) << "op " << op;
        auto known = std::find(same.begin(), same.end(), p);
        ASSERT_NE(known, same.end()) << "op " << op << ": a block that was not free";
        same.erase(known);
        if (same.empty()) model.erase(it);
        free_slots.push_back(slot_of[p]);
        model_count--;
        model_words -= got;
      }
    }
    ASSERT_EQ(this->s_.count(), model_count);
    ASSERT_EQ(this->words(), model_words);
    ASSERT_EQ(this->s_.empty(), model_count == 0);
    ASSERT_EQ(this->largest(), model.empty() ? 0 : model.rbegin()->first);
    ASSERT_VERIFIED(this->s_);
  }
}

}  // namespace
}  // namespace metaspace
