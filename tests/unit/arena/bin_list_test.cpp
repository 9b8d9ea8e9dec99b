// BinList: exact-size LIFO bins for 1..32 words, "smallest non-empty bin ≥ n" in O(1).
#include "arena/bin_list.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "common/error.hpp"

namespace metaspace {
namespace {

// Backing memory for blocks: each block gets its own slot of 32 words, so sizes never overlap.
struct Slots {
  explicit Slots(size_t n) : words(n * BinList::kMaxWords) {}
  void* at(size_t i) { return &words[i * BinList::kMaxWords]; }
  std::vector<uint64_t> words;
};

#define ASSERT_VERIFIED(x) ASSERT_TRUE((x).verify()) << ms_last_error_text()

TEST(BinList, EmptyTakesNothing) {
  BinList bins;
  size_t got = 0;
  EXPECT_TRUE(bins.empty());
  EXPECT_EQ(bins.take(1, &got), nullptr);
  EXPECT_EQ(bins.take(BinList::kMaxWords, &got), nullptr);
  ASSERT_VERIFIED(bins);
}

TEST(BinList, ExactSizesRoundTrip) {
  Slots slots(BinList::kBins);
  BinList bins;
  for (size_t w = 1; w <= BinList::kMaxWords; w++) {
    bins.add(slots.at(w - 1), w);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_EQ(bins.count(), BinList::kBins);
  EXPECT_EQ(bins.words(), BinList::kBins * (BinList::kBins + 1) / 2);
  // Every size is present, so each request is served by its own bin.
  for (size_t w = BinList::kMaxWords; w >= 1; w--) {
    size_t got = 0;
    EXPECT_EQ(bins.take(w, &got), slots.at(w - 1));
    EXPECT_EQ(got, w);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_TRUE(bins.empty());
  EXPECT_EQ(bins.words(), 0u);
}

TEST(BinList, BestFitIsSmallestAtLeastN) {
  Slots slots(4);
  BinList bins;
  bins.add(slots.at(0), 3);
  bins.add(slots.at(1), 17);
  bins.add(slots.at(2), 32);
  size_t got = 0;
  EXPECT_EQ(bins.take(4, &got), slots.at(1));  // 3 is too small, 17 is the smallest fit
  EXPECT_EQ(got, 17u);
  ASSERT_VERIFIED(bins);
  EXPECT_EQ(bins.take(18, &got), slots.at(2));
  EXPECT_EQ(got, 32u);
  ASSERT_VERIFIED(bins);
  EXPECT_EQ(bins.take(4, &got), nullptr);  // only the 3-word block is left
  EXPECT_EQ(bins.take(1, &got), slots.at(0));
  EXPECT_EQ(got, 3u);
  EXPECT_TRUE(bins.empty());
  ASSERT_VERIFIED(bins);
}

TEST(BinList, SameSizeBlocksAreLifo) {
  Slots slots(3);
  BinList bins;
  for (size_t i = 0; i < 3; i++) bins.add(slots.at(i), 5);
  EXPECT_EQ(bins.count(), 3u);
  EXPECT_EQ(bins.words(), 15u);
  for (size_t i = 3; i-- > 0;) {
    size_t got = 0;
    EXPECT_EQ(bins.take(5, &got), slots.at(i));
    EXPECT_EQ(got, 5u);
    ASSERT_VERIFIED(bins);
  }
  EXPECT_TRUE(bins.empty());
}

TEST(BinList, OneWordBlocksAreKept) {
  Slots slots(2);
  BinList bins;
  bins.add(slots.at(0), 1);
  size_t got = 0;
  EXPECT_EQ(bins.take(1, &got), slots.at(0));
  EXPECT_EQ(got, 1u);
  ASSERT_VERIFIED(bins);
}

// Random adds and takes against a model (size → addresses); every answer must be the model's
// smallest size ≥ n, and counters must track it exactly.
TEST(BinList, RandomAgainstModel) {
  constexpr size_t kSlots = 4000;
  Slots slots(kSlots);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < kSlots; i++) free_slots.push_back(i);
  std::map<size_t, std::vector<void*>> model;  // words → blocks, last added at the back
  std::map<void*, size_t> slot_of;
  size_t model_count = 0;
  size_t model_words = 0;
  BinList bins;
  std::mt19937 rng(42);
  for (int op = 0; op < 20000; op++) {
    if (!free_slots.empty() && rng() % 2 == 0) {
      size_t slot = free_slots.back();
      free_slots.pop_back();
      size_t w = 1 + rng() % BinList::kMaxWords;
      bins.add(slots.at(slot), w);
      model[w].push_back(slots.at(slot));
      slot_of[slots.at(slot)] = slot;
      model_count++;
      model_words += w;
    } else {
      size_t w = 1 + rng() % BinList::kMaxWords;
      size_t got = 0;
      void* p = bins.take(w, &got);
      auto it = model.lower_bound(w);
      if (it == model.end()) {
        ASSERT_EQ(p, nullptr) << "op " << op;
      } else {
        ASSERT_EQ(got, it->first) << "op " << op;
        ASSERT_EQ(p, it->second.back()) << "op " << op;
        it->second.pop_back();
        if (it->second.empty()) model.erase(it);
        free_slots.push_back(slot_of[p]);
        model_count--;
        model_words -= got;
      }
    }
    ASSERT_EQ(bins.count(), model_count);
    ASSERT_EQ(bins.words(), model_words);
    ASSERT_EQ(bins.empty(), model_count == 0);
    ASSERT_VERIFIED(bins);
  }
}

}  // namespace
}  // namespace metaspace
