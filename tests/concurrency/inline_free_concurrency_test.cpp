// The inline free and reuse of a loader that is not shared run without the loader's lock; the
// library's readers (ms_verify walks the bins, statistics read their counters) run concurrently
// from other threads (owner_exclusion.hpp). Under TSan (--preset tsan) these are the tests that
// find a missing ordering. Also: frees and reuse of every size class on one shared loader from
// two threads at once (they keep the loader's lock).
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "support/accounting.hpp"

namespace {

// Sizes from every structure: small bins, medium bins, the tree.
constexpr size_t kSizes[] = {8, 24, 64, 136, 256, 264, 512, 1024, 1032, 2000};
// Every 8th block is a Klass (66..100 words and one above 128): the class arena's bins, which
// the library fills and empties without the lock for the owner (Arena::owner_deallocate).
constexpr size_t kClassSizes[] = {528, 600, 664, 800, 1040};

void fill(void* p, size_t n, unsigned char v) { std::memset(p, v, n); }
bool holds(const void* p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++) {
    if (static_cast<const unsigned char*>(p)[i] != v) return false;
  }
  return true;
}

// Verification passes and the accounting identity holds, per space.
void expect_consistent(ms_metaspace_t* ms) {
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  for (const ms_space_stats_t& s : st.space) {
    EXPECT_EQ(s.committed_bytes, metaspace::test::accounted_bytes(s));
  }
}

TEST(InlineFreeConcurrency, OwnerFreesAndReusesWhileOtherThreadsVerifyAndReadStatistics) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  std::atomic<bool> done{false};
  std::atomic<int> verify_failures{0};
  std::atomic<size_t> reader_rounds{0};
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      if (ms_verify(ms) != MS_OK) verify_failures++;
      ms_stats_t st;
      ms_get_stats(ms, &st);
      ms_usage_t u;
      u.size = sizeof u;
      ms_get_usage(ms, &u);
      ms_loader_stats_t ls;
      ms_loader_get_stats(l, &ls);
      reader_rounds++;
    }
  });
  bool patterns_ok = true;
  constexpr size_t kBlocks = 256;
  std::vector<void*> blocks(kBlocks);
  auto space_of = [](size_t i) { return i % 8 == 3 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS; };
  auto size_of = [](size_t i, int round) {
    return i % 8 == 3 ? kClassSizes[(i / 8 + round) % std::size(kClassSizes)]
                      : kSizes[(i + round) % std::size(kSizes)];
  };
  for (int round = 0; round < 200; round++) {
    for (size_t i = 0; i < kBlocks; i++) {
      size_t n = size_of(i, round);
      blocks[i] = ms_allocate(l, space_of(i), n);
      ASSERT_NE(blocks[i], nullptr);
      fill(blocks[i], n, static_cast<unsigned char>(i));
    }
    for (size_t i = 1; i < kBlocks; i += 2) {
      ASSERT_EQ(ms_deallocate(l, blocks[i], size_of(i, round)), MS_OK);
    }
    for (size_t i = 1; i < kBlocks; i += 2) {
      size_t n = size_of(i, round);
      blocks[i] = ms_allocate(l, space_of(i), n);
      ASSERT_NE(blocks[i], nullptr);
      fill(blocks[i], n, static_cast<unsigned char>(i));
    }
    for (size_t i = 0; i < kBlocks; i++) {
      size_t n = size_of(i, round);
      patterns_ok = patterns_ok && holds(blocks[i], n, static_cast<unsigned char>(i));
      ASSERT_EQ(ms_deallocate(l, blocks[i], n), MS_OK);
    }
  }
  // Let the reader see the final state at least once more.
  size_t seen = reader_rounds.load();
  while (reader_rounds.load() < seen + 2) std::this_thread::yield();
  done.store(true, std::memory_order_release);
  reader.join();
  EXPECT_TRUE(patterns_ok) << "two live blocks overlapped";
  EXPECT_EQ(verify_failures.load(), 0) << ms_last_error_text();
  expect_consistent(ms);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  ms_destroy(ms);
}

// Two threads on one shared loader, each freeing its own blocks of every size class and
// allocating again: a block is never handed to both (patterns intact), and every block comes
// back through best fit (verify, accounting).
TEST(InlineFreeConcurrency, SharedLoaderFreesAndReusesFromTwoThreadsAtOnce) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::atomic<int> failures{0};
  auto worker = [&](unsigned char tag) {
    constexpr size_t kBlocks = 128;
    std::vector<void*> blocks(kBlocks);
    for (int round = 0; round < 100; round++) {
      for (size_t i = 0; i < kBlocks; i++) {
        size_t n = kSizes[(i + round) % std::size(kSizes)];
        blocks[i] = ms_allocate(shared, MS_SPACE_NONCLASS, n);
        if (blocks[i] == nullptr) {
          failures++;
          return;
        }
        fill(blocks[i], n, tag);
      }
      for (size_t i = 0; i < kBlocks; i++) {
        size_t n = kSizes[(i + round) % std::size(kSizes)];
        if (!holds(blocks[i], n, tag)) failures++;
        if (ms_deallocate(shared, blocks[i], n) != MS_OK) failures++;
      }
    }
  };
  std::thread a(worker, static_cast<unsigned char>(0xA1));
  std::thread b(worker, static_cast<unsigned char>(0xB2));
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  expect_consistent(ms);
  ASSERT_EQ(ms_loader_destroy(shared), MS_OK);
  ms_destroy(ms);
}

}  // namespace
