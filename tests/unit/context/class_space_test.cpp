// The compressed class space: narrow pointers at every shift, the bit width, placement at a
// requested base (and the fallback when it is taken), the guard granule that keeps narrow 0
// free for NULL, and class alignment gaps going to the loader's non-class arena.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "support/ms_assertions.hpp"

namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
constexpr size_t GiB = 1024 * MiB;


ms_metaspace_t* create(size_t class_alignment, size_t class_space_bytes = 1 * GiB,
                       uintptr_t base = 0, ms_reclaim_t reclaim = MS_RECLAIM_BALANCED) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = class_alignment;
  s.class_space_bytes = class_space_bytes;
  s.class_space_base = base;
  s.reclaim = reclaim;
  return ms_create(&s);
}

unsigned log2_of(size_t x) {
  unsigned n = 0;
  while ((size_t{1} << n) < x) n++;
  return n;
}

TEST(ClassSpace, NarrowPointerRoundTripsAtEveryShift) {
  for (size_t alignment = 8; alignment <= 1024; alignment *= 2) {
    SCOPED_TRACE(alignment);
    ms_metaspace_t* ms = create(alignment);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ASSERT_EQ(ms_class_shift(ms), log2_of(alignment));
    EXPECT_EQ(ms_encode_class(ms, nullptr), 0u);
    EXPECT_EQ(ms_decode_class(ms, 0), nullptr);
    uintptr_t base = ms_class_space_base(ms);
    ms_loader_t* loaders[3] = {ms_loader_create(ms, MS_LOADER_STANDARD, 0),
                               ms_loader_create(ms, MS_LOADER_MICRO, 0),
                               ms_loader_create(ms, MS_LOADER_BOOT, 0)};
    std::mt19937 rng(static_cast<unsigned>(alignment));
    for (int i = 0; i < 600; i++) {
      ms_loader_t* l = loaders[i % 3];
      size_t bytes = 500 + rng() % 525;
      char* p = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, bytes));
      ASSERT_NE(p, nullptr) << ms_last_error_text();
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
      ASSERT_TRUE(ms_is_class_space(ms, p));
      ASSERT_GT(reinterpret_cast<uintptr_t>(p), base) << "a class at the base would encode as 0";
      uint32_t narrow = ms_encode_class(ms, p);
      ASSERT_NE(narrow, 0u);
      ASSERT_EQ(ms_decode_class(ms, narrow), p);
      ASSERT_EQ(static_cast<uintptr_t>(narrow) << log2_of(alignment),
                reinterpret_cast<uintptr_t>(p) - base);
      std::memset(p, 0x5A, bytes);
      // Non-class data interleaved, as a runtime would allocate it.
      ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 8 + rng() % 200), nullptr);
    }
    ASSERT_MS_OK(ms_verify(ms));
    // The highest narrow value still names an address inside the space.
    uint32_t top = static_cast<uint32_t>((uint64_t{1} << ms_narrow_class_bits(ms)) - 1);
    char* last = static_cast<char*>(ms_decode_class(ms, top));
    EXPECT_TRUE(ms_is_class_space(ms, last));
    EXPECT_FALSE(ms_is_class_space(ms, last + alignment));
    for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

TEST(ClassSpace, NarrowBitWidth) {
  struct Case {
    size_t space;
    size_t alignment;
    unsigned bits;
  };
  const Case cases[] = {{1 * GiB, 1024, 20}, {1 * GiB, 8, 27}, {4 * GiB, 8, 29},
                        {4 * GiB, 1024, 22}, {64 * MiB, 64, 20}, {3 * GiB, 8, 29}};
  for (const Case& c : cases) {
    ms_metaspace_t* ms = create(c.alignment, c.space);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    EXPECT_EQ(ms_narrow_class_bits(ms), c.bits) << c.space << " bytes at " << c.alignment;
    ms_destroy(ms);
  }
}

// A granule at the base is a guard that is never committed: nothing is charged for it, for any
// reclaim policy, and the accounting identity holds on an empty metaspace.
TEST(ClassSpace, GuardGranuleCostsNothing) {
  for (ms_reclaim_t reclaim : {MS_RECLAIM_NONE, MS_RECLAIM_BALANCED, MS_RECLAIM_AGGRESSIVE}) {
    SCOPED_TRACE(reclaim);
    ms_metaspace_t* ms = create(8, 1 * GiB, 0, reclaim);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ASSERT_MS_OK(ms_verify(ms));
    ms_stats_t st;
    ASSERT_MS_OK(ms_get_stats(ms, &st));
    EXPECT_EQ(st.total.committed_bytes - st.total.overhead_bytes, 0u) << "only bookkeeping";
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr) << ms_last_error_text();
    ASSERT_MS_OK(ms_verify(ms));
    ASSERT_MS_OK(ms_loader_destroy(l));
    ms_purge(ms);
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

// A free range for the class space: reserve it, note where it is, give it back.
uintptr_t find_free_range(size_t bytes, size_t alignment) {
  void* p = mmap(nullptr, bytes + alignment, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return 0;
  munmap(p, bytes + alignment);
  return (reinterpret_cast<uintptr_t>(p) + alignment - 1) & ~(alignment - 1);
}

TEST(ClassSpace, PlacedAtRequestedBase) {
  const size_t space = 256 * MiB;
  uintptr_t wish = find_free_range(space, 4 * MiB);
  ASSERT_NE(wish, 0u);
  ms_metaspace_t* ms = create(64, space, wish);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_class_space_base(ms), wish);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* k = ms_allocate(l, MS_SPACE_CLASS, 700);
  ASSERT_NE(k, nullptr) << ms_last_error_text();
  EXPECT_GE(reinterpret_cast<uintptr_t>(k), wish);
  EXPECT_LT(reinterpret_cast<uintptr_t>(k), wish + space);
  EXPECT_EQ(ms_decode_class(ms, ms_encode_class(ms, k)), k);
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

TEST(ClassSpace, FallsBackWhenRequestedRangeIsTaken) {
  const size_t space = 256 * MiB;
  uintptr_t wish = find_free_range(space, 4 * MiB);
  ASSERT_NE(wish, 0u);
  // Someone else holds a page in the middle of the wanted range.
  void* squatter = mmap(reinterpret_cast<void*>(wish + space / 2), 4096, PROT_READ,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_NE(squatter, MAP_FAILED);
  ms_metaspace_t* ms = create(64, space, wish);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_last_error(), MS_OK);
  EXPECT_NE(std::strstr(ms_last_error_text(), "requested base"), nullptr) << ms_last_error_text();
  EXPECT_NE(ms_class_space_base(ms), wish);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* k = ms_allocate(l, MS_SPACE_CLASS, 700);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(ms_decode_class(ms, ms_encode_class(ms, k)), k);
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
  munmap(squatter, 4096);
}

// With 1 KiB alignment the gap behind a class goes to the loader's non-class free blocks; the
// next non-class allocation that fits is placed in it.
TEST(ClassSpace, AlignmentGapServesNonClassAllocation) {
  ms_metaspace_t* ms = create(1024);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  char* k1 = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 600));
  ASSERT_NE(k1, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_EQ(st.space[MS_SPACE_CLASS].alignment_gap_bytes, 424u);
  EXPECT_EQ(st.space[MS_SPACE_CLASS].used_bytes, 600u);
  ASSERT_MS_OK(ms_verify(ms));

  char* k2 = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 600));
  EXPECT_EQ(k2, k1 + 1024);  // the gap is skipped, not handed to the next class
  char* nc = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 400));
  EXPECT_TRUE(ms_is_class_space(ms, nc));
  EXPECT_TRUE(nc == k1 + 600 || nc == k2 + 600) << "non-class block not placed in a gap";
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_EQ(st.space[MS_SPACE_CLASS].alignment_gap_bytes, 424u + 24u);
  EXPECT_EQ(st.space[MS_SPACE_CLASS].used_bytes, 1600u);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].used_bytes, 0u);
  ASSERT_MS_OK(ms_verify(ms));

  // Freeing the non-class block that lives in class space keeps it a non-class free block.
  ASSERT_MS_OK(ms_deallocate(l, nc, 400));
  ASSERT_MS_OK(ms_verify(ms));
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 400), nc);
  ASSERT_MS_OK(ms_verify(ms));
  ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

// Non-class allocation sizes of the workload model (docs/workload-model.md), in bytes.
size_t nonclass_size(std::mt19937& rng) {
  unsigned r = rng() % 100;
  size_t words;
  if (r < 38) {
    words = 1 + rng() % 8;
  } else if (r < 84) {
    words = 9 + rng() % 8;
  } else if (r < 92) {
    words = 17 + rng() % 24;
  } else {
    words = 41 + rng() % 90;
  }
  return words * 8 - rng() % 8;
}

// What 1 KiB class alignment costs per class once the gaps are offered to non-class data:
// classes of 500 B – 1 KiB, each followed by ~40 non-class blocks, in 20 loaders.
TEST(ClassSpace, AlignmentLossPerClassWithRealisticMix) {
  ms_metaspace_t* ms = create(1024);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  constexpr int kLoaders = 20;
  constexpr int kClassesPerLoader = 150;
  std::vector<ms_loader_t*> loaders;
  for (int i = 0; i < kLoaders; i++) loaders.push_back(ms_loader_create(ms, MS_LOADER_STANDARD, 0));
  std::mt19937 rng(2024);
  size_t raw_gap = 0;
  size_t nonclass_in_class_space = 0;
  size_t nonclass_blocks = 0;
  // Gap bytes awaiting reuse per class loaded so far, sampled after every round of classes.
  double gap_samples = 0;
  int samples = 0;
  for (int c = 0; c < kClassesPerLoader; c++) {
    for (ms_loader_t* l : loaders) {
      size_t klass = 500 + rng() % 525;
      ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, klass), nullptr) << ms_last_error_text();
      raw_gap += 1024 - ((klass + 7) & ~size_t{7});
      int n = 36 + static_cast<int>(rng() % 9);
      for (int i = 0; i < n; i++) {
        void* p = ms_allocate(l, MS_SPACE_NONCLASS, nonclass_size(rng));
        ASSERT_NE(p, nullptr) << ms_last_error_text();
        nonclass_in_class_space += ms_is_class_space(ms, p) ? 1 : 0;
        nonclass_blocks++;
      }
    }
    ms_stats_t round;
    ASSERT_MS_OK(ms_get_stats(ms, &round));
    gap_samples += static_cast<double>(round.space[MS_SPACE_CLASS].alignment_gap_bytes) /
                   (kLoaders * (c + 1));
    samples++;
  }
  ASSERT_MS_OK(ms_verify(ms));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  const double classes = kLoaders * kClassesPerLoader;
  const ms_space_stats_t& cs = st.space[MS_SPACE_CLASS];
  double left_in_gaps = static_cast<double>(cs.alignment_gap_bytes) / classes;
  double class_free = static_cast<double>(cs.free_blocks_bytes) / classes;
  std::printf("[ class ] 1 KiB alignment, %d classes: raw gap %.1f B/class; gap awaiting reuse "
              "%.1f B/class on average while loading, %.1f B/class at the end (all class-space "
              "free blocks %.1f B/class); %.1f%% of non-class blocks placed in class space\n",
              static_cast<int>(classes), raw_gap / classes, gap_samples / samples, left_in_gaps,
              class_free,
              100.0 * static_cast<double>(nonclass_in_class_space) /
                  static_cast<double>(nonclass_blocks));
  EXPECT_GT(nonclass_in_class_space, 0u);
  // Without reuse every gap would be lost; best fit over all sizes must recover most of it.
  EXPECT_LT(left_in_gaps, raw_gap / classes / 4);
  EXPECT_LT(gap_samples / samples, raw_gap / classes / 4);
  for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

}  // namespace
