// Arena: growth by policy, in-place enlargement, salvage, deallocation reuse, the fast-path
// window and commit on demand, on a private non-class context with its own limiter.
//
// Every allocation goes through the public header's inline ms_allocate, the code runtimes
// compile, not a copy of it: each arena's window sits in a loader head of its own, and this file
// renames the out-of-line call the inline code makes when the window cannot serve, so that the
// slow path lands in the arena under test instead of the library's handle lookup.
#define ms_allocate_slow arena_test_slow_path
#include <metaspace/metaspace.h>
#undef ms_allocate_slow

#include "arena/arena.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/units.hpp"
#include "context/context.hpp"
#include "os/fault_injection.hpp"

namespace metaspace {
namespace {

// The arena whose window the inline path was just given; its slow path is this arena's.
thread_local Arena* slow_path_arena = nullptr;
thread_local uint64_t slow_path_calls = 0;

}  // namespace
}  // namespace metaspace

extern "C" void* arena_test_slow_path(ms_loader_t*, ms_space_t, size_t bytes) noexcept {
  metaspace::slow_path_calls++;
  return metaspace::slow_path_arena->allocate(bytes);
}

namespace metaspace {
namespace {

constexpr size_t kRoot = 4 * MiB;
constexpr size_t kGranule = 16 * KiB;

class ArenaTest : public ::testing::Test {
 protected:
  explicit ArenaTest(ms_reclaim_t reclaim = MS_RECLAIM_BALANCED, size_t cap_bytes = 0)
      : limiter_(cap_bytes),
        context_(MS_SPACE_NONCLASS, NodeGeometry{.reserve_bytes = 64 * MiB,
                                                  .root_chunk_bytes = kRoot,
                                                  .granule_bytes = kGranule,
                                                  .protect_uncommitted = false}, limiter_,
                 ReclaimPolicy::of(reclaim), 0) {
    slow_path_calls = 0;
  }

  std::unique_ptr<Arena> make(const std::vector<size_t>& sequence, ms__bump* window,
                               bool fast_path = true, bool count_allocations = false) {
    return std::make_unique<Arena>(context_.chunks(),
                                   GrowthPolicy(sequence, context_.chunks().geometry()),
                                   ArenaOptions{.head = &head_of(*window),
                                                .space = MS_SPACE_NONCLASS,
                                                .fast_path = fast_path,
                                                .count_allocations = count_allocations});
  }

  // The loader head around a window new_window() made.
  static ms__loader_head& head_of(ms__bump& window) {
    return *reinterpret_cast<ms__loader_head*>(
        reinterpret_cast<char*>(&window) - offsetof(ms__loader_head, bump[MS_SPACE_NONCLASS]));
  }
  static uint32_t fit_max(ms__bump& window) { return head_of(window).fit_max[MS_SPACE_NONCLASS]; }

  // A fast-path window inside a loader head of its own, as a loader has it.
  ms__bump& new_window() { return heads_.emplace_back().bump[MS_SPACE_NONCLASS]; }

  // ms_allocate, the public inline function, on the head around `window`: its fast path bumps
  // the window, its slow path is `arena`'s.
  static void* allocate(Arena& arena, ms__bump& window, size_t bytes) {
    ms__loader_head* head = &head_of(window);
    head->cookie = reinterpret_cast<uintptr_t>(head) ^ ms__handle_secret;
    slow_path_arena = &arena;
    return ms_allocate(reinterpret_cast<ms_loader_t*>(head), MS_SPACE_NONCLASS, bytes);
  }

  ArenaStats stats(const Arena& arena) {
    std::lock_guard<std::mutex> guard(context_.chunks().lock());
    return arena.stats_locked();
  }

  // Arena and chunk manager invariants, and the accounting of the whole context: everything
  // committed is either in an arena's chunk or in a free chunk.
  void check(const std::vector<const Arena*>& arenas) {
    for (const Arena* a : arenas) ASSERT_TRUE(a->verify()) << ms_last_error_text();
    ASSERT_TRUE(context_.verify()) << ms_last_error_text();
    std::lock_guard<std::mutex> guard(context_.chunks().lock());
    size_t committed = 0;
    for (const Arena* a : arenas) {
      ArenaStats s = a->stats_locked();
      committed += s.committed_bytes;
      ASSERT_LE(s.consumed_bytes, s.committed_bytes);
      ASSERT_LE(s.free_blocks_bytes, s.consumed_bytes);
    }
    for (const FreeChunkLevelStats& f : context_.chunks().free_chunk_stats_locked()) {
      committed += f.committed_bytes;
    }
    ASSERT_EQ(committed, context_.vslist().committed_bytes());
    ASSERT_EQ(limiter_.committed_bytes(), context_.vslist().committed_bytes());
  }
  void check(const Arena& a) { check(std::vector<const Arena*>{&a}); }

  // The space counters once `arenas` (all that hold chunks) folded: used is exactly `handed_out`
  // (the test's live blocks, rounded to words), free blocks and the salvaged bytes in them what
  // the arenas' statistics say (tails left in place included), the block count too.
  void check_counters(const std::vector<Arena*>& arenas, size_t handed_out) {
    for (Arena* a : arenas) a->fold_usage();
    std::lock_guard<std::mutex> guard(context_.chunks().lock());
    size_t free_bytes = 0, free_count = 0, salvaged = 0;
    for (const Arena* a : arenas) {
      ArenaStats s = a->stats_locked();
      free_bytes += s.free_blocks_bytes;
      free_count += s.free_blocks_count;
      for (BlockWhere w : {BlockWhere::kOwnSpace, BlockWhere::kOtherSpace}) {
        salvaged += s.free_bytes(w, BlockOrigin::kSalvaged);
      }
    }
    const SpaceUsage& u = context_.chunks().usage();
    EXPECT_EQ(u.used_bytes.load(), handed_out);
    size_t counted_free = 0;
    for (const auto& b : u.free_block_bytes) counted_free += b.load();
    EXPECT_EQ(counted_free, free_bytes);
    EXPECT_EQ(u.free_block_bytes[static_cast<int>(BlockOrigin::kSalvaged)].load(), salvaged);
    EXPECT_EQ(u.free_block_count.load(), free_count);
  }

  const ChunkGeometry& geometry() { return context_.chunks().geometry(); }

  CommitLimiter limiter_;
  Context context_;
  std::deque<ms__loader_head> heads_;  // stable addresses: arenas keep pointers to the windows
};

class ArenaNoMergeTest : public ArenaTest {
 protected:
  ArenaNoMergeTest() : ArenaTest(MS_RECLAIM_NONE) {}
};

class ArenaCappedTest : public ArenaTest {
 protected:
  ArenaCappedTest() : ArenaTest(MS_RECLAIM_BALANCED, 3 * kGranule) {}
};

// Without merging no chunk can be enlarged, so every chunk is taken at the policy's level. The
// chunk manager may hand out a smaller free chunk (up to two levels) rather than split a larger
// one, as HotSpot does, so a chunk is at most the policy's size and at least a quarter of it;
// or a committed splinter of any size that fits, before fresh memory (ChunkManager's
// take_free_chunk_locked): with reclaim none's whole-chunk commits, the buddy of the first
// chunk lies in its committed granule.
TEST_F(ArenaNoMergeTest, GrowsByPolicy) {
  const std::vector<size_t> seq = GrowthPolicy::default_sequence(MS_LOADER_STANDARD,
                                                                 MS_SPACE_NONCLASS);
  ms__bump& window = new_window();
  auto arena = make(seq, &window);
  ArenaStats before = stats(*arena);
  std::vector<size_t> taken;
  while (taken.size() < seq.size() + 4) {
    size_t space_committed = context_.vslist().committed_bytes();
    ASSERT_NE(allocate(*arena, window, 64), nullptr) << ms_last_error_text();
    ArenaStats s = stats(*arena);
    if (s.chunks == before.chunks) continue;
    ASSERT_EQ(s.chunks, before.chunks + 1);
    int level = -1;
    for (int l = 0; l < kMaxLevels; l++) {
      if (s.chunks_by_level[l] == before.chunks_by_level[l] + 1) level = l;
    }
    ASSERT_GE(level, 0);
    size_t k = taken.size();
    size_t wanted = seq[k < seq.size() ? k : seq.size() - 1];
    taken.push_back(geometry().bytes(level));
    EXPECT_LE(taken.back(), wanted) << "chunk " << k;
    if (taken.back() < wanted / 4) {
      EXPECT_LE(taken.back(), kGranule) << "chunk " << k << ": smaller than a quarter, not a splinter";
      EXPECT_EQ(context_.vslist().committed_bytes(), space_committed)
          << "chunk " << k << " was committed already";
    }
    ASSERT_EQ(s.capacity_bytes, before.capacity_bytes + taken.back());
    before = s;
    check(*arena);
  }
  EXPECT_EQ(taken.front(), seq.front());
  // Once the policy has reached its last size, splinters are used up and chunks are that size.
  EXPECT_EQ(taken.back(), seq.back());
  std::string printed;
  for (size_t b : taken) printed += std::to_string(b / KiB) + "K ";
  std::printf("[ arena ] standard non-class chunks taken: %s\n", printed.c_str());
}

TEST_F(ArenaTest, LargeRequestGetsAChunkThatFitsIt) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB}, &window);
  ASSERT_NE(allocate(*arena, window, 100), nullptr);
  ASSERT_NE(allocate(*arena, window, 100 * KiB), nullptr) << ms_last_error_text();
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.chunks, 2u);
  EXPECT_EQ(s.chunks_by_level[geometry().level_fitting(128 * KiB)], 1u);
  check(*arena);
  // The next small request continues in the big chunk: the policy is not reset by it.
  ASSERT_NE(allocate(*arena, window, 100), nullptr);
  EXPECT_EQ(stats(*arena).chunks, 2u);
  check(*arena);
}

TEST_F(ArenaTest, EnlargesInPlaceWhenBuddyIsFree) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB, 8 * KiB}, &window);
  char* first = static_cast<char*>(allocate(*arena, window, 512));
  ASSERT_NE(first, nullptr);
  for (int i = 1; i < 8; i++) ASSERT_EQ(allocate(*arena, window, 512), first + 512 * i);
  ArenaStats s = stats(*arena);
  ASSERT_EQ(s.chunks, 1u);
  ASSERT_EQ(s.capacity_bytes, 4 * KiB);
  check(*arena);
  // The chunk is full; its buddy is free, so it doubles without moving.
  EXPECT_EQ(allocate(*arena, window, 512), first + 4 * KiB);
  s = stats(*arena);
  EXPECT_EQ(s.chunks, 1u);
  EXPECT_EQ(s.capacity_bytes, 8 * KiB);
  EXPECT_EQ(s.chunks_by_level[geometry().level_fitting(8 * KiB)], 1u);
  EXPECT_EQ(s.free_blocks_count, 0u);
  check(*arena);
}

TEST_F(ArenaTest, NoEnlargementWhenBuddyIsTaken) {
  ms__bump& wa = new_window();
  ms__bump& wb = new_window();
  auto a = make({4 * KiB, 8 * KiB}, &wa);
  auto b = make({4 * KiB, 8 * KiB}, &wb);
  char* pa = static_cast<char*>(allocate(*a, wa, 4 * KiB));
  char* pb = static_cast<char*>(allocate(*b, wb, 4 * KiB));
  ASSERT_NE(pa, nullptr);
  ASSERT_EQ(pb, pa + 4 * KiB) << "b was expected to get a's buddy";
  check({a.get(), b.get()});
  char* next = static_cast<char*>(allocate(*a, wa, 64));
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next, pa + 4 * KiB);
  ArenaStats s = stats(*a);
  EXPECT_EQ(s.chunks, 2u);
  EXPECT_EQ(s.capacity_bytes, 12 * KiB);
  check({a.get(), b.get()});
}

// A graduated micro loader's arena: 1 KiB first, then larger chunks (or the current one doubled
// in place), so 12.5 KiB of blocks take a handful of chunks, not one per KiB.
TEST_F(ArenaTest, MicroPolicyGrowsFromOneKiB) {
  ms__bump& window = new_window();
  auto arena = make(GrowthPolicy::default_sequence(MS_LOADER_MICRO, MS_SPACE_NONCLASS), &window);
  ASSERT_NE(allocate(*arena, window, 64), nullptr);
  EXPECT_EQ(stats(*arena).capacity_bytes, 1 * KiB) << "the first chunk is the smallest";
  for (int i = 1; i < 200; i++) ASSERT_NE(allocate(*arena, window, 64), nullptr);
  ArenaStats s = stats(*arena);
  EXPECT_LE(s.chunks, 5u);
  EXPECT_GE(s.capacity_bytes, 200 * 64u);
  EXPECT_LE(s.capacity_bytes, 2 * 200 * 64u);
  check(*arena);
}

// A retired chunk's committed tail becomes a free block. While it waits, requests it could hold
// leave the fast path (fit_max) and are served from it; larger ones stay on the fast path.
TEST_F(ArenaTest, SalvageTailAndFastPathWindow) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB, 4 * KiB}, &window);
  EXPECT_EQ(window.top, nullptr);  // no chunk yet
  char* first = static_cast<char*>(allocate(*arena, window, 3000));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(window.top, first + 3000);
  EXPECT_EQ(window.end, first + 4 * KiB);
  check(*arena);

  char* second = static_cast<char*>(allocate(*arena, window, 2000));  // does not fit the tail
  ASSERT_NE(second, nullptr);
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.chunks, 2u);
  EXPECT_EQ(s.free_blocks_count, 1u);
  EXPECT_EQ(s.free_blocks_bytes, 4 * KiB - 3000);
  EXPECT_EQ(window.top, second + 2000);  // the window stays open in the current chunk
  EXPECT_EQ(fit_max(window), 4 * KiB - 3000);
  check(*arena);

  EXPECT_EQ(allocate(*arena, window, 1000), first + 3000);  // from the tail; 96 bytes left
  s = stats(*arena);
  EXPECT_EQ(s.free_blocks_count, 1u);
  EXPECT_EQ(s.free_blocks_bytes, 96u);
  EXPECT_EQ(fit_max(window), 96u);
  check(*arena);

  EXPECT_EQ(allocate(*arena, window, 200), second + 2000);  // larger than any free block
  EXPECT_EQ(allocate(*arena, window, 96), first + 4000);
  EXPECT_EQ(stats(*arena).free_blocks_count, 0u);
  EXPECT_EQ(fit_max(window), 0u);
  check(*arena);
  EXPECT_EQ(allocate(*arena, window, 8), second + 2200);
  check(*arena);
}

// Only the committed part of the retired chunk is salvaged; its uncommitted rest costs nothing.
TEST_F(ArenaTest, SalvageStopsAtCommittedEnd) {
  ms__bump& window = new_window();
  auto arena = make({64 * KiB, 64 * KiB}, &window);
  char* first = static_cast<char*>(allocate(*arena, window, 10 * KiB));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(stats(*arena).committed_bytes, kGranule);
  ASSERT_NE(allocate(*arena, window, 60 * KiB), nullptr);
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.chunks, 2u);
  EXPECT_EQ(s.free_blocks_bytes, kGranule - 10 * KiB);
  EXPECT_EQ(s.committed_bytes, kGranule + 64 * KiB);
  check(*arena);
}

// A loader that never frees: a retired chunk's committed tail below kSmallestTailWorthFiling
// stays in place, without a free-block structure (672 bytes of bookkeeping) to file it. The
// tail is waste: consumed, counted as salvaged free bytes but not as a block, not owned (never
// handed out), and it does not hold back the fast path. The first free makes the structure,
// which files every tail left in place; they are then reused like any salvaged tail.
TEST_F(ArenaTest, SmallTailStaysInPlaceUntilTheFirstFree) {
  static_assert(Arena::kSmallestTailWorthFiling > 592 + 8, "the tails below are small");
  ms__bump& window = new_window();
  auto arena = make({4 * KiB, 4 * KiB}, &window);
  char* first = static_cast<char*>(allocate(*arena, window, 3504));
  ASSERT_NE(first, nullptr);
  char* second = static_cast<char*>(allocate(*arena, window, 2000));  // 592 bytes left behind
  ASSERT_NE(second, nullptr);
  size_t handed_out = 3504 + 2000;
  EXPECT_EQ(arena->free_blocks(), nullptr) << "a structure was made for a 592-byte tail";
  EXPECT_EQ(arena->unfiled_tail_bytes(), 592u);
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.chunks, 2u);
  EXPECT_EQ(s.free_blocks_count, 0u);
  EXPECT_EQ(s.free_blocks_bytes, 592u);
  EXPECT_EQ(s.free_bytes(BlockWhere::kOwnSpace, BlockOrigin::kSalvaged), 592u);
  EXPECT_EQ(s.unfiled_tail_bytes, 592u);
  EXPECT_EQ(s.consumed_bytes, 4 * KiB + 2000);
  EXPECT_EQ(s.consumed_bytes - s.free_blocks_bytes, handed_out);
  EXPECT_TRUE(arena->owns(first, 3504));
  EXPECT_FALSE(arena->owns(first + 3504, 8)) << "the tail was never handed out";
  EXPECT_EQ(fit_max(window), 0u);
  EXPECT_EQ(window.top, second + 2000);
  check(*arena);
  check_counters({arena.get()}, handed_out);

  // A second tail (488 bytes): the sum passes the threshold, each tail stays below it.
  EXPECT_EQ(allocate(*arena, window, 8), second + 2000) << "served from the tail";
  ASSERT_EQ(allocate(*arena, window, 1600), second + 2008);
  char* third = static_cast<char*>(allocate(*arena, window, 600));
  ASSERT_NE(third, nullptr);
  handed_out += 8 + 1600 + 600;
  EXPECT_EQ(arena->free_blocks(), nullptr);
  EXPECT_EQ(arena->unfiled_tail_bytes(), 592u + 488u);
  s = stats(*arena);
  EXPECT_EQ(s.free_blocks_count, 0u);
  EXPECT_EQ(s.free_blocks_bytes, 1080u);
  EXPECT_EQ(s.consumed_bytes - s.free_blocks_bytes, handed_out);
  check(*arena);
  check_counters({arena.get()}, handed_out);

  // The first free: the structure, with the freed block and both tails in it.
  ASSERT_EQ(arena->deallocate(second + 2000, 8), MS_OK);
  handed_out -= 8;
  ASSERT_NE(arena->free_blocks(), nullptr);
  EXPECT_EQ(arena->unfiled_tail_bytes(), 0u);
  s = stats(*arena);
  EXPECT_EQ(s.free_blocks_count, 3u);
  EXPECT_EQ(s.free_blocks_bytes, 8u + 1080u);
  EXPECT_EQ(s.free_bytes(BlockWhere::kOwnSpace, BlockOrigin::kSalvaged), 1080u);
  EXPECT_EQ(s.unfiled_tail_bytes, 0u);
  EXPECT_EQ(s.consumed_bytes - s.free_blocks_bytes, handed_out);
  EXPECT_EQ(fit_max(window), 592u);
  EXPECT_TRUE(arena->owns(first + 3504, 592)) << "a filed tail is the free blocks'";
  check(*arena);
  check_counters({arena.get()}, handed_out);
  EXPECT_EQ(allocate(*arena, window, 592), first + 3504);
  EXPECT_EQ(allocate(*arena, window, 488), second + 3608);
  handed_out += 592 + 488;
  EXPECT_EQ(stats(*arena).free_blocks_count, 1u);  // the freed 8 bytes
  check(*arena);
  check_counters({arena.get()}, handed_out);
}

// At kSmallestTailWorthFiling a tail is filed (and makes the structure); a word less, it is not.
TEST_F(ArenaTest, TailOfTheThresholdIsFiledAndReused) {
  constexpr size_t kTail = Arena::kSmallestTailWorthFiling;
  static_assert(kTail % kWordBytes == 0 && kTail + 64 < 4 * KiB, "a tail of a 4 KiB chunk");
  for (size_t tail : {kTail, kTail - kWordBytes}) {
    SCOPED_TRACE(tail);
    ms__bump& window = new_window();
    auto arena = make({4 * KiB, 4 * KiB}, &window);
    char* first = static_cast<char*>(allocate(*arena, window, 4 * KiB - tail));
    ASSERT_NE(first, nullptr);
    ASSERT_NE(allocate(*arena, window, tail + 8), nullptr);  // does not fit the tail
    size_t handed_out = 4 * KiB + 8;
    bool filed = tail >= Arena::kSmallestTailWorthFiling;
    EXPECT_EQ(arena->free_blocks() != nullptr, filed);
    EXPECT_EQ(arena->unfiled_tail_bytes(), filed ? 0u : tail);
    ArenaStats s = stats(*arena);
    EXPECT_EQ(s.free_blocks_count, filed ? 1u : 0u);
    EXPECT_EQ(s.free_blocks_bytes, tail);
    EXPECT_EQ(fit_max(window), filed ? tail : 0u);
    check(*arena);
    check_counters({arena.get()}, handed_out);
    char* next = static_cast<char*>(allocate(*arena, window, tail));
    EXPECT_EQ(next == first + 4 * KiB - tail, filed) << "a filed tail is reused, only that";
    handed_out += tail;
    EXPECT_EQ(stats(*arena).free_blocks_bytes, filed ? 0u : tail);
    check(*arena);
    check_counters({arena.get()}, handed_out);
  }
}

// An arena that already has its free-block structure files even a small tail.
TEST_F(ArenaTest, ArenaWithFreeBlocksFilesASmallTail) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB, 4 * KiB}, &window);
  char* a = static_cast<char*>(allocate(*arena, window, 64));
  ASSERT_NE(allocate(*arena, window, 8), nullptr);
  ASSERT_EQ(arena->deallocate(a, 64), MS_OK);
  ASSERT_NE(arena->free_blocks(), nullptr);
  ASSERT_EQ(allocate(*arena, window, 64), a);
  ASSERT_EQ(allocate(*arena, window, 3432), a + 72);  // top at 3 504: a 592-byte tail
  ASSERT_NE(allocate(*arena, window, 2000), nullptr);
  size_t handed_out = 3504 + 2000;
  EXPECT_EQ(arena->unfiled_tail_bytes(), 0u);
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.free_blocks_count, 1u);
  EXPECT_EQ(s.free_blocks_bytes, 592u);
  EXPECT_EQ(fit_max(window), 592u);
  check(*arena);
  check_counters({arena.get()}, handed_out);
  EXPECT_EQ(allocate(*arena, window, 592), a + 3504);
  check(*arena);
  check_counters({arena.get()}, handed_out + 592);
}

// Checked mode files every tail, as before (its free blocks are where frees are checked).
TEST_F(ArenaTest, CheckedArenaFilesASmallTail) {
  ms__bump& window = new_window();
  Arena arena(context_.chunks(), GrowthPolicy({4 * KiB, 4 * KiB}, geometry()),
              ArenaOptions{.head = &head_of(window), .space = MS_SPACE_NONCLASS, .checked = true});
  char* first = static_cast<char*>(arena.allocate(3504 - Fence::kBytes));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(arena.allocate(2000), nullptr);
  EXPECT_EQ(arena.unfiled_tail_bytes(), 0u);
  ASSERT_NE(arena.free_blocks(), nullptr);
  ArenaStats s = stats(arena);
  EXPECT_EQ(s.free_blocks_count, 1u);
  EXPECT_EQ(s.free_blocks_bytes, 592u);
  check(arena);
  EXPECT_EQ(arena.allocate(592 - Fence::kBytes), first + 3504);
  check(arena);
}

// A class arena whose tails go to its loader's non-class arena (class alignment above 8) leaves
// a small tail in place while that arena has no structure; the structure, once made, files the
// class arena's tails too, and non-class requests reuse them.
TEST_F(ArenaTest, DonorTailsAreFiledByTheWastageArenasFirstStructure) {
  ms__bump& window = new_window();
  ms__loader_head& head = head_of(window);
  auto nonclass = make({4 * KiB}, &window);
  auto klass = std::make_unique<Arena>(
      context_.chunks(), GrowthPolicy({4 * KiB, 4 * KiB}, geometry()),
      ArenaOptions{.alignment = 64, .head = &head, .space = MS_SPACE_CLASS,
                   .wastage = nonclass.get()});
  char* k1 = static_cast<char*>(klass->allocate(3520));  // 64-byte multiples: no gaps
  ASSERT_NE(k1, nullptr);
  char* k2 = static_cast<char*>(klass->allocate(640));   // a 576-byte tail left in place
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(klass->unfiled_tail_bytes(), 576u);
  EXPECT_EQ(klass->free_blocks(), nullptr);
  EXPECT_EQ(nonclass->free_blocks(), nullptr);
  // The class chunks are "the other space" for the non-class arena, as in a loader.
  const char* lo = std::min(k1, k2);
  const char* hi = std::max(k1, k2) + 4 * KiB;
  nonclass->set_foreign_range(lo, hi);
  char* x = static_cast<char*>(allocate(*nonclass, window, 64));
  ASSERT_NE(allocate(*nonclass, window, 64), nullptr);
  ASSERT_TRUE(x < lo || x >= hi) << "the non-class chunk lies among the class chunks";
  size_t handed_out = 3520 + 640 + 128;
  ASSERT_TRUE(klass->verify()) << ms_last_error_text();
  ASSERT_TRUE(nonclass->verify()) << ms_last_error_text();
  check_counters({klass.get(), nonclass.get()}, handed_out);

  ASSERT_EQ(nonclass->deallocate(x, 64), MS_OK);  // the non-class arena's first structure
  handed_out -= 64;
  EXPECT_EQ(klass->unfiled_tail_bytes(), 0u);
  ArenaStats ks = stats(*klass);
  EXPECT_EQ(ks.free_blocks_bytes, 0u);
  ArenaStats ns = stats(*nonclass);
  EXPECT_EQ(ns.free_blocks_count, 2u);
  EXPECT_EQ(ns.free_bytes(BlockWhere::kOtherSpace, BlockOrigin::kSalvaged), 576u);
  EXPECT_EQ(fit_max(window), 576u);
  ASSERT_TRUE(klass->verify()) << ms_last_error_text();
  ASSERT_TRUE(nonclass->verify()) << ms_last_error_text();
  ASSERT_TRUE(context_.verify()) << ms_last_error_text();
  check_counters({klass.get(), nonclass.get()}, handed_out);
  EXPECT_EQ(allocate(*nonclass, window, 576), k1 + 3520);
  handed_out += 576;
  ASSERT_TRUE(nonclass->verify()) << ms_last_error_text();
  check_counters({klass.get(), nonclass.get()}, handed_out);
  klass.reset();  // first, as a loader's: it gives the non-class arena its tails
}

TEST_F(ArenaTest, DeallocatedBlockIsReusedBySmallerRequest) {
  ms__bump& window = new_window();
  auto arena = make({64 * KiB}, &window);
  // (freed size, next request): within the bins, within the tree, and a small request served
  // by a tree block.
  const std::pair<size_t, size_t> cases[] = {
      {200, 200}, {200, 150}, {1000, 1000}, {1000, 300}, {1000, 24}, {264, 8}, {8, 8}};
  for (auto [n, m] : cases) {
    char* p = static_cast<char*>(allocate(*arena, window, n));
    ASSERT_NE(allocate(*arena, window, 64), nullptr);  // a neighbour, so p is not at the top
    arena->deallocate(p, n);
    EXPECT_EQ(fit_max(window), align_up(n, 8)) << "fast path would bypass the free block";
    check(*arena);
    EXPECT_EQ(allocate(*arena, window, m), p) << n << " then " << m;
    size_t rest = align_up(n, 8) - align_up(m, 8);
    ArenaStats s = stats(*arena);
    EXPECT_EQ(s.free_blocks_bytes, rest) << n << " then " << m;
    check(*arena);
    if (rest > 0) {
      EXPECT_EQ(allocate(*arena, window, rest), p + align_up(m, 8)) << "remainder not refiled";
      check(*arena);
    }
    EXPECT_EQ(stats(*arena).free_blocks_count, 0u);
    EXPECT_EQ(fit_max(window), 0u);
  }
}

TEST_F(ArenaTest, BestFitAmongSeveralFreeBlocks) {
  ms__bump& window = new_window();
  auto arena = make({64 * KiB}, &window);
  std::vector<std::pair<char*, size_t>> blocks;
  for (size_t n : {64, 400, 96, 2000, 120}) {
    blocks.push_back({static_cast<char*>(allocate(*arena, window, n)), n});
    ASSERT_NE(allocate(*arena, window, 8), nullptr);
  }
  for (auto [p, n] : blocks) arena->deallocate(p, n);
  check(*arena);
  EXPECT_EQ(allocate(*arena, window, 100), blocks[4].first);  // 120 is the best fit for 100
  EXPECT_EQ(allocate(*arena, window, 90), blocks[2].first);   // 96
  EXPECT_EQ(allocate(*arena, window, 300), blocks[1].first);  // 400
  check(*arena);
}

TEST_F(ArenaTest, CommitsOnDemandGranuleByGranule) {
  ms__bump& window = new_window();
  auto arena = make({256 * KiB}, &window);
  char* p = static_cast<char*>(allocate(*arena, window, 100));
  ASSERT_NE(p, nullptr);
  ArenaStats s = stats(*arena);
  EXPECT_EQ(s.capacity_bytes, 256 * KiB);
  EXPECT_EQ(s.committed_bytes, kGranule);
  EXPECT_EQ(window.end, p + kGranule);
  check(*arena);
  // Fill the first granule exactly: still one granule.
  ASSERT_EQ(allocate(*arena, window, kGranule - 104), p + 104);
  EXPECT_EQ(stats(*arena).committed_bytes, kGranule);
  // One more byte needs the second granule, and only that.
  ASSERT_EQ(allocate(*arena, window, 8), p + kGranule);
  EXPECT_EQ(stats(*arena).committed_bytes, 2 * kGranule);
  EXPECT_EQ(window.end, p + 2 * kGranule);
  check(*arena);
  // A block spanning several granules commits exactly those.
  ASSERT_NE(allocate(*arena, window, 3 * kGranule), nullptr);
  EXPECT_EQ(stats(*arena).committed_bytes, 5 * kGranule);
  EXPECT_EQ(limiter_.committed_bytes(), 5 * kGranule);
  check(*arena);
}

// The kernel refusing memory (injected where the node first opens a root chunk area) leaves
// no trace: no chunk in the arena, nothing charged, and the next attempt works.
TEST_F(ArenaTest, CommitFailureLeavesArenaConsistent) {
  ms__bump& window = new_window();
  auto arena = make({256 * KiB}, &window);
  os::inject_fault(os::FaultPoint::kCommit, 1);
  EXPECT_EQ(allocate(*arena, window, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED) << ms_last_error_text();
  os::inject_fault(os::FaultPoint::kCommit, 0);
  EXPECT_EQ(stats(*arena).chunks, 0u);
  EXPECT_EQ(limiter_.committed_bytes(), 0u);
  EXPECT_EQ(window.top, nullptr);
  check(*arena);
  char* p = static_cast<char*>(allocate(*arena, window, 64));
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  EXPECT_EQ(stats(*arena).committed_bytes, kGranule);
  check(*arena);
}

// At the cap, the allocation that needs another granule fails with MS_ERR_LIMIT; the bump
// state is untouched, smaller requests that fit the committed part still succeed.
TEST_F(ArenaCappedTest, CapStopsCommitCleanly) {
  ms__bump& window = new_window();
  auto arena = make({256 * KiB}, &window);
  char* p = static_cast<char*>(allocate(*arena, window, 3 * kGranule - 64));
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  EXPECT_EQ(limiter_.committed_bytes(), 3 * kGranule);
  EXPECT_EQ(allocate(*arena, window, 128), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
  EXPECT_EQ(limiter_.committed_bytes(), 3 * kGranule);
  check(*arena);
  EXPECT_EQ(allocate(*arena, window, 64), p + 3 * kGranule - 64);
  EXPECT_EQ(allocate(*arena, window, 8), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  check(*arena);
}

TEST_F(ArenaTest, DestroyReturnsEveryChunk) {
  ms__bump& window = new_window();
  {
    auto arena = make(GrowthPolicy::default_sequence(MS_LOADER_STANDARD, MS_SPACE_NONCLASS),
                      &window);
    for (int i = 0; i < 5000; i++) ASSERT_NE(allocate(*arena, window, 72), nullptr);
    EXPECT_GT(stats(*arena).chunks, 3u);
    check(*arena);
  }
  EXPECT_EQ(window.top, nullptr);
  EXPECT_EQ(window.end, nullptr);
  check(std::vector<const Arena*>{});
  std::lock_guard<std::mutex> guard(context_.chunks().lock());
  EXPECT_EQ(context_.chunks().chunks_in_use_locked(), 0u);
  // Everything merged back into root chunks.
  std::vector<FreeChunkLevelStats> free = context_.chunks().free_chunk_stats_locked();
  size_t non_root = 0;
  for (size_t l = 1; l < free.size(); l++) non_root += free[l].count;
  EXPECT_EQ(non_root, 0u);
}

// The inline path's bounds: a request that fills the window exactly is bumped inline, one word
// more goes to the slow path; so does a request some free block could hold (up to fit_max), and
// one word above fit_max is bumped again. (Size 0 and sizes that wrap when rounded up are
// refused through a real loader: ApiErrors.SizeZero, ApiErrors.LargerThanRootChunk.)
TEST_F(ArenaTest, InlinePathServesExactlyWhatTheWindowHolds) {
  ms__bump& window = new_window();
  auto arena = make({64 * KiB}, &window);
  char* first = static_cast<char*>(allocate(*arena, window, 64));  // opens the first chunk
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(slow_path_calls, 1u) << "the window was closed";
  check(*arena);

  auto served_inline = [&](size_t bytes, const char* what) {
    uint64_t calls = slow_path_calls;
    char* top = window.top;
    void* p = allocate(*arena, window, bytes);
    EXPECT_NE(p, nullptr) << what << ": " << ms_last_error_text();
    if (slow_path_calls != calls) return false;
    EXPECT_EQ(p, top) << what;
    EXPECT_EQ(window.top, top + align_up(bytes, kWordBytes)) << what;
    EXPECT_EQ(window.spare, 0u) << what << ": the inline path counts nothing";
    return true;
  };

  size_t room = static_cast<size_t>(window.end - window.top);
  ASSERT_EQ(room, kGranule - 64) << "the window ends where the chunk's commitment does";
  EXPECT_FALSE(served_inline(room + 1, "one byte more than the window holds"));
  check(*arena);
  room = static_cast<size_t>(window.end - window.top);
  ASSERT_GT(room, 64u);
  EXPECT_TRUE(served_inline(room - 64, "all but 64 bytes"));
  EXPECT_TRUE(served_inline(64, "exactly the rest of the window"));
  EXPECT_EQ(window.top, window.end);
  EXPECT_FALSE(served_inline(8, "a full window"));
  check(*arena);

  // A freed block makes requests it could hold leave the inline path.
  char* block = static_cast<char*>(allocate(*arena, window, 200));
  ASSERT_NE(allocate(*arena, window, 8), nullptr);  // a neighbour, so the block is not at the top
  arena->deallocate(block, 200);
  ASSERT_EQ(fit_max(window), 200u);
  ASSERT_GT(static_cast<size_t>(window.end - window.top), 208u);
  EXPECT_TRUE(served_inline(208, "one word above fit_max"));
  EXPECT_FALSE(served_inline(200, "exactly fit_max"));
  check(*arena);
  EXPECT_EQ(arena->slow_allocations(), slow_path_calls);
  EXPECT_EQ(arena->allocations(), 0u) << "an arena that does not count counts nothing";
}

TEST_F(ArenaTest, WithoutFastPathWindowStaysClosed) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB}, &window, /*fast_path=*/false);
  for (int i = 0; i < 100; i++) {
    void* p = allocate(*arena, window, 64);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(window.top, nullptr);
    ASSERT_TRUE(arena->owns(p, 64));
  }
  EXPECT_EQ(arena->slow_allocations(), 100u);
  check(*arena);
}

// Counting allocations closes the window even when the fast path is asked for (the inline path
// does not count), and every block the arena hands out is counted once: new ones and reused
// free blocks.
TEST_F(ArenaTest, CountingArenaKeepsItsWindowClosedAndCountsEveryBlock) {
  ms__bump& window = new_window();
  auto arena = make({4 * KiB}, &window, /*fast_path=*/true, /*count_allocations=*/true);
  std::vector<void*> blocks;
  for (int i = 0; i < 100; i++) {
    blocks.push_back(allocate(*arena, window, 64));
    ASSERT_NE(blocks.back(), nullptr);
    ASSERT_EQ(window.top, nullptr) << "a counting arena's window stays closed";
  }
  for (int i = 0; i < 100; i += 2) ASSERT_EQ(arena->deallocate(blocks[i], 64), MS_OK);
  for (int i = 0; i < 50; i++) ASSERT_NE(allocate(*arena, window, 64), nullptr);  // reused
  EXPECT_EQ(slow_path_calls, 150u);
  EXPECT_EQ(arena->allocations(), 150u);
  EXPECT_EQ(head_of(window).bins, nullptr) << "no inline reuse either";
  EXPECT_EQ(window.spare, 0u);
  check(*arena);
}

}  // namespace
}  // namespace metaspace
