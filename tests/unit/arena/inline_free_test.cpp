// The inline ms_deallocate and the exact-size reuse of ms_allocate (metaspace.h), through the
// public API: a loader that is not shared files and takes blocks of 1..128 words in the bins its
// head points to, without a call; everything they cannot do themselves goes out of line, with
// the same results.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "support/accounting.hpp"
#include "support/api_fixtures.hpp"

namespace {

class InlineFree : public metaspace::test::OneStandardLoader {
 protected:
  void TearDown() override {
    check();
    OneStandardLoader::TearDown();
  }
  void check() {
    ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    ms_stats_t st;
    ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
    for (const ms_space_stats_t& s : st.space) EXPECT_EQ(s.committed_bytes, metaspace::test::accounted_bytes(s));
  }
  const ms__loader_head& head() const { return *ms__head_of(l_); }
  void* alloc(size_t n) {
    void* p = ms_allocate(l_, MS_SPACE_NONCLASS, n);
    EXPECT_NE(p, nullptr) << ms_last_error_text();
    if (p != nullptr) std::memset(p, 0x5A, n);
    return p;
  }

};

TEST_F(InlineFree, FreedBlockIsReusedForItsSizeEverySizeUpTo128Words) {
  for (size_t n = 8; n <= 1024 + 64; n += 8) {
    void* p = alloc(n);
    void* keep = alloc(8);  // p is not the last block: the slot is not simply bumped again
    ASSERT_EQ(ms_deallocate(l_, p, n), MS_OK) << n;
    if (n <= 1024) {
      ASSERT_NE(head().bins, nullptr) << "bins published at the first free";
      const ms__free_bin* bin = n <= 256 ? &head().bins->bin[n / 8 - 1]
                                         : head().bins->medium != nullptr
                                               ? &head().bins->medium->bin[n / 8 - 33]
                                               : nullptr;
      ASSERT_NE(bin, nullptr) << n << ": medium bins made at the first free of their size";
      EXPECT_EQ(bin->first, reinterpret_cast<uintptr_t>(p)) << n;
      EXPECT_EQ(bin->count, 1u) << n;
    }
    EXPECT_GE(head().fit_max[MS_SPACE_NONCLASS], n) << "the fast path must not bypass it";
    check();
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, n), p) << n << " bytes: the freed block";
    check();
    ASSERT_EQ(ms_deallocate(l_, keep, 8), MS_OK);
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 8), keep);
  }
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].deallocated_bytes, 0u) << "every freed block reused";
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
  // The inline paths count nothing, and the library counts nothing either: no partial count
  // (with count_allocations the inline paths are closed: tests/unit/stats/allocation_count_test).
  EXPECT_EQ(ls.allocations_counted, 0);
  EXPECT_EQ(ls.allocations, 0u);
  EXPECT_EQ(st.allocations_counted, 0);
}

// The inline push writes a bin's non-empty bit only when the bin fills, the pop clears it only
// when it empties: the bit must follow the bin through both, in each mask word (small, and the
// medium bins' two words, split at 97 words).
TEST_F(InlineFree, NonEmptyBitFollowsTheBinThroughFillAndEmpty) {
  for (size_t w : {size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{96}, size_t{97}, size_t{128}}) {
    size_t n = w * 8;
    void* a = alloc(n);
    void* b = alloc(n);
    void* keep = alloc(8);  // neither freed block is the last one handed out
    ASSERT_EQ(ms_deallocate(l_, a, n), MS_OK) << w;
    ASSERT_EQ(ms_deallocate(l_, b, n), MS_OK) << w;
    ASSERT_NE(head().bins, nullptr);
    const ms__free_bins& f = *head().bins;
    auto bit_set = [&] {
      if (w <= 32) return (f.mask >> (w - 1) & 1u) != 0;
      return f.medium != nullptr && (f.medium->mask[(w - 33) / 64] >> ((w - 33) % 64) & 1u) != 0;
    };
    const ms__free_bin& bin = w <= 32 ? f.bin[w - 1] : f.medium->bin[w - 33];
    EXPECT_EQ(bin.count, 2u) << w;
    EXPECT_TRUE(bit_set()) << w << " words: two blocks filed";
    check();
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, n), b) << w;
    EXPECT_TRUE(bit_set()) << w << " words: one block left";
    check();
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, n), a) << w;
    EXPECT_FALSE(bit_set()) << w << " words: the bin is empty";
    EXPECT_EQ(bin.count, 0u) << w;
    check();
    // Filled again from empty: the bit comes back.
    ASSERT_EQ(ms_deallocate(l_, a, n), MS_OK) << w;
    EXPECT_TRUE(bit_set()) << w << " words: filled again";
    check();
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, n), a) << w;
    ASSERT_EQ(ms_deallocate(l_, keep, 8), MS_OK);
    EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 8), keep);
    check();
  }
}

TEST_F(InlineFree, StatisticsCountInlineFreedBlocks) {
  std::vector<void*> blocks;
  size_t freed = 0;
  for (size_t n = 8; n <= 1024; n += 40) blocks.push_back(alloc(n));
  alloc(8);
  ms_loader_stats_t before;
  ASSERT_EQ(ms_loader_get_stats(l_, &before), MS_OK);  // salvaged chunk tails, if any
  size_t i = 0;
  for (size_t n = 8; n <= 1024; n += 40, i++) {
    ASSERT_EQ(ms_deallocate(l_, blocks[i], n), MS_OK);
    freed += n;
  }
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
  EXPECT_EQ(ls.free_blocks_count[MS_SPACE_NONCLASS],
            before.free_blocks_count[MS_SPACE_NONCLASS] + blocks.size());
  EXPECT_EQ(ls.free_blocks_bytes[MS_SPACE_NONCLASS],
            before.free_blocks_bytes[MS_SPACE_NONCLASS] + freed);
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].deallocated_bytes, freed);
}

TEST_F(InlineFree, BestFitAcrossSmallMediumAndTreeSizes) {
  // Free blocks of 3, 24, 40 and 200 words, each between live ones.
  size_t sizes[] = {3 * 8, 24 * 8, 40 * 8, 200 * 8};
  void* freed[4];
  for (int k = 0; k < 4; k++) {
    freed[k] = alloc(sizes[k]);
    alloc(8);
  }
  for (int k = 0; k < 4; k++) ASSERT_EQ(ms_deallocate(l_, freed[k], sizes[k]), MS_OK);
  check();
  // No exact bin: the smallest block that holds the request, wherever it is kept.
  EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 2 * 8), freed[0]) << "3 words for 2";
  check();
  EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 24 * 8), freed[1]) << "the exact 24 words";
  EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 33 * 8), freed[2]) << "40 words for 33";
  check();
  EXPECT_EQ(ms_allocate(l_, MS_SPACE_NONCLASS, 129 * 8), freed[3]) << "200 words for 129";
  check();
}

TEST_F(InlineFree, BlocksInOlderChunksAreFreedAndReusedToo) {
  // ~1 MiB of 64-byte blocks: many chunks, so most lie in retired chunks.
  std::vector<void*> blocks;
  for (int i = 0; i < 16384; i++) blocks.push_back(alloc(64));
  for (size_t i = 0; i < blocks.size(); i += 2) ASSERT_EQ(ms_deallocate(l_, blocks[i], 64), MS_OK);
  check();
  std::vector<void*> again;
  for (size_t i = 0; i < blocks.size(); i += 2) again.push_back(ms_allocate(l_, MS_SPACE_NONCLASS, 64));
  std::sort(again.begin(), again.end());
  std::vector<void*> expected;
  for (size_t i = 0; i < blocks.size(); i += 2) expected.push_back(blocks[i]);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(again, expected) << "every freed block reused, nothing else";
}

TEST_F(InlineFree, PointersTheLoaderDidNotHandOutAreRefusedUntouched) {
  void* p = alloc(64);
  ASSERT_EQ(ms_deallocate(l_, p, 64), MS_OK);  // bins published
  alignas(8) static unsigned char outside[256];
  std::memset(outside, 0x33, sizeof outside);
  EXPECT_EQ(ms_deallocate(l_, outside, 64), MS_ERR_NOT_OWNED);
  // Right behind the last block handed out (bumped: larger than the free one): inside the
  // chunk, but not handed out yet.
  char* last = static_cast<char*>(alloc(128));
  ASSERT_EQ(last + 128, head().bump[MS_SPACE_NONCLASS].top);
  EXPECT_EQ(ms_deallocate(l_, last + 128, 16), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_deallocate(l_, last + 120, 16), MS_ERR_NOT_OWNED) << "runs past the last block";
  EXPECT_EQ(ms_deallocate(l_, last + 1, 8), MS_ERR_NOT_OWNED) << "misaligned";
  for (unsigned char c : outside) ASSERT_EQ(c, 0x33);
  // A block of another loader.
  ms_loader_t* other = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  void* q = ms_allocate(other, MS_SPACE_NONCLASS, 32);
  EXPECT_EQ(ms_deallocate(l_, q, 32), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_deallocate(other, q, 32), MS_OK);
  EXPECT_EQ(ms_loader_destroy(other), MS_OK);
  EXPECT_EQ(ms_deallocate(other, q, 32), MS_ERR_DESTROYED);
}

// Class space: the class arena's bins are filled and emptied by the library without the loader
// lock (Arena::owner_deallocate / owner_reuse), for blocks in its current chunk or the retired
// chunk the last locked free found; the rest through the lock. Either way a freed Klass comes
// back at its exact place for a request of its size, aligned for a narrow class pointer.
void* alloc_class(ms_loader_t* l, size_t n) {
  void* p = ms_allocate(l, MS_SPACE_CLASS, n);
  EXPECT_NE(p, nullptr) << ms_last_error_text();
  if (p != nullptr) std::memset(p, 0x6B, n);
  return p;
}

void class_block_freed_and_reused_at_its_place(ms_metaspace_t* ms, ms_loader_t* l,
                                               size_t alignment) {
  const auto& head = *ms__head_of(l);
  // 48 Klasses of 66..100 words: the first ones come from the micro pool (pooled blocks are not
  // reused), the later ones from the loader's class arena after it graduated.
  std::vector<std::pair<void*, size_t>> klasses;
  for (size_t i = 0; i < 48; i++) {
    size_t n = (66 + (i * 7) % 35) * 8;
    klasses.push_back({alloc_class(l, n), n});
  }
  for (size_t i = 24; i < klasses.size(); i++) {
    auto [p, n] = klasses[i];
    ASSERT_EQ(ms_deallocate(l, p, n), MS_OK) << i;
    // The inline bump must not bypass the freed block: fit_max covers it, or (a class alignment
    // above 8) the class window never opens and fit_max stays 0 (arena.hpp).
    if (alignment == 8) {
      EXPECT_GE(head.fit_max[MS_SPACE_CLASS], n) << i << ": the bump must not bypass it";
    } else {
      EXPECT_EQ(head.bump[MS_SPACE_CLASS].top, head.bump[MS_SPACE_CLASS].end) << i;
      EXPECT_EQ(head.fit_max[MS_SPACE_CLASS], 0u) << i << ": a window that never opens";
    }
    void* again = ms_allocate(l, MS_SPACE_CLASS, n);
    EXPECT_EQ(again, p) << i << ": " << n << " bytes: the freed block, at its place";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(again) % alignment, 0u) << i;
    EXPECT_TRUE(ms_is_class_space(ms, again)) << i;
    EXPECT_EQ(ms_decode_class(ms, ms_encode_class(ms, again)), again) << i;
  }
  // All of them freed (newest first, then oldest first), then all asked for again: every one
  // of the arena's comes back, none twice.
  for (size_t i = klasses.size(); i-- > 24;) {
    ASSERT_EQ(ms_deallocate(l, klasses[i].first, klasses[i].second), MS_OK);
  }
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  std::vector<void*> expected, got;
  for (size_t i = 24; i < klasses.size(); i++) {
    expected.push_back(klasses[i].first);
    got.push_back(ms_allocate(l, MS_SPACE_CLASS, klasses[i].second));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got.back()) % alignment, 0u) << i;
  }
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected) << "every freed Klass reused, nothing else";
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
}

TEST_F(InlineFree, ClassBlocksAreFreedAndReusedAtTheirPlace) {
  class_block_freed_and_reused_at_its_place(ms_, l_, 8);
  check();
}

TEST(InlineFreeClassAlignment, LargeClassAlignmentKeepsTheLockedPathAndTheAlignment) {
  for (size_t alignment : {size_t{64}, size_t{1024}}) {
    ms_settings_t s;
    ms_settings_init(&s);
    s.class_alignment_bytes = alignment;
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    class_block_freed_and_reused_at_its_place(ms, l, alignment);
    EXPECT_EQ(ms_loader_destroy(l), MS_OK);
    ms_destroy(ms);
  }
}

// Class frees and reuses well past the 16 KiB budget between folds: once statistics bring the
// counters up to date they are exact (free block bytes and counts, deallocated bytes, the
// identity, usage == snapshot), and every block handed out is counted once.
TEST_F(InlineFree, CountersAreExactAfterManyClassFreesAndReuses) {
  constexpr size_t kKlasses = 400;  // ~265 KiB
  std::vector<std::pair<void*, size_t>> klasses;
  for (size_t i = 0; i < kKlasses; i++) {
    size_t n = (66 + (i * 13) % 35) * 8;
    klasses.push_back({alloc_class(l_, n), n});
  }
  // The first free makes the class arena's free-block structure, which files the chunk tails
  // left in place until then (Arena::kSmallestTailWorthFiling) as blocks: before the figures
  // are taken, so that each free below adds one block. (The last Klass, not one of the first
  // ones the micro pool gave; its block is taken again at once.)
  size_t first_free = klasses.back().second;
  ASSERT_EQ(ms_deallocate(l_, klasses.back().first, first_free), MS_OK);
  ASSERT_NE(ms_allocate(l_, MS_SPACE_CLASS, first_free), nullptr);
  ms_loader_stats_t before;
  ASSERT_EQ(ms_loader_get_stats(l_, &before), MS_OK);
  ms_stats_t st0;
  ASSERT_EQ(ms_get_stats(ms_, &st0), MS_OK);
  size_t freed = 0;
  for (size_t i = 0; i < kKlasses; i += 2) {
    ASSERT_EQ(ms_deallocate(l_, klasses[i].first, klasses[i].second), MS_OK);
    freed += klasses[i].second;
  }
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
  EXPECT_EQ(ls.free_blocks_bytes[MS_SPACE_CLASS], before.free_blocks_bytes[MS_SPACE_CLASS] + freed);
  EXPECT_EQ(ls.free_blocks_count[MS_SPACE_CLASS],
            before.free_blocks_count[MS_SPACE_CLASS] + kKlasses / 2);
  EXPECT_EQ(ls.used_bytes[MS_SPACE_CLASS], before.used_bytes[MS_SPACE_CLASS] - freed);
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  EXPECT_EQ(st.space[MS_SPACE_CLASS].deallocated_bytes,
            st0.space[MS_SPACE_CLASS].deallocated_bytes + freed);
  EXPECT_EQ(st.space[MS_SPACE_CLASS].used_bytes, st0.space[MS_SPACE_CLASS].used_bytes - freed);
  ms_usage_t u{};
  u.size = sizeof u;
  ASSERT_EQ(ms_get_usage(ms_, &u), MS_OK);
  EXPECT_EQ(u.space[MS_SPACE_CLASS].used_bytes, st.space[MS_SPACE_CLASS].used_bytes);
  check();
  // The same sizes again: the arena's blocks are reused (the pooled ones stay deallocated until
  // the loader dies).
  for (size_t i = 0; i < kKlasses; i += 2) {
    void* p = ms_allocate(l_, MS_SPACE_CLASS, klasses[i].second);
    ASSERT_NE(p, nullptr);
  }
  ASSERT_EQ(ms_loader_get_stats(l_, &ls), MS_OK);
  EXPECT_EQ(ls.allocations_counted, 0);
  EXPECT_EQ(ls.allocations, 0u) << "not counted, also not on the owner's class path";
  EXPECT_EQ(ls.used_bytes[MS_SPACE_CLASS], before.used_bytes[MS_SPACE_CLASS]);
  EXPECT_LE(ls.free_blocks_bytes[MS_SPACE_CLASS], before.free_blocks_bytes[MS_SPACE_CLASS] + freed);
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  ASSERT_EQ(ms_get_usage(ms_, &u), MS_OK);
  EXPECT_EQ(u.space[MS_SPACE_CLASS].used_bytes, st.space[MS_SPACE_CLASS].used_bytes);
}

TEST(InlineFreeModes, CheckedAndSharedLoadersKeepTheOutOfLinePath) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = 1;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 48);
  ms_allocate(l, MS_SPACE_NONCLASS, 8);
  ASSERT_EQ(ms_deallocate(l, p, 48), MS_OK);
  EXPECT_EQ(ms__head_of(l)->bins, nullptr);
  EXPECT_EQ(ms_deallocate(l, p, 48), MS_ERR_DOUBLE_FREE) << "checked mode still sees it";
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);

  ms = ms_create(nullptr);
  l = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  p = ms_allocate(l, MS_SPACE_NONCLASS, 48);
  ASSERT_EQ(ms_deallocate(l, p, 48), MS_OK);
  EXPECT_EQ(ms__head_of(l)->bins, nullptr) << "shared: locked";
  // This thread bumps on in its window; the freed block is the next window a thread takes (best
  // fit for its request), here a new thread's first.
  void* again = nullptr;
  std::thread([&] { again = ms_allocate(l, MS_SPACE_NONCLASS, 48); }).join();
  EXPECT_EQ(again, p);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

}  // namespace
