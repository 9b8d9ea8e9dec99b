// The bookkeeping allocator on the real process: slots are reused, empty pages leave the resident
// set on purge (at once with return_at_once), and an injected failure leaves everything as it was.
#include "slab/slab_allocator.hpp"

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <set>
#include <vector>

#include "common/units.hpp"
#include "os/fault_injection.hpp"
#include "proc_memory.hpp"

namespace metaspace {
namespace {

constexpr size_t kHeaderBytes = 80;  // a chunk header

// What a shared loader's windows are made with (loader/shared_windows.hpp): every object lies on
// line pairs of its own, interleaved with plain objects of every size around it, and freeing
// gives every byte back.
TEST(SlabAllocator, AlignedObjectsShareNoLineWithAnyOtherObject) {
  struct alignas(128) Record {
    char bytes[128];
  };
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = false});
  ASSERT_TRUE(slabs.ok());
  std::vector<Record*> records;
  std::vector<std::pair<char*, size_t>> plain;
  for (size_t i = 0; i < 300; i++) {
    records.push_back(slabs.create_aligned<Record>());
    size_t bytes = 16 * (1 + i % 24);  // the size classes up to 384 bytes, the record's own too
    plain.emplace_back(static_cast<char*>(slabs.allocate(bytes)), bytes);
  }
  for (Record* r : records) {
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(is_aligned(r, 128));
    std::memset(r, 0x5A, sizeof(Record));  // all of it is the record's to write
  }
  std::vector<std::pair<const char*, const char*>> ranges;  // [lo, hi) per object
  for (Record* r : records) ranges.emplace_back(reinterpret_cast<char*>(r), reinterpret_cast<char*>(r + 1));
  for (auto [p, n] : plain) {
    // A plain object owns the 128-byte pairs it touches as far as sharing goes.
    ranges.emplace_back(align_down(p, 128), align_up(p + n, 128));
  }
  for (Record* r : records) {
    const char* lo = reinterpret_cast<char*>(r);
    size_t overlapping = 0;
    for (auto [a, b] : ranges) overlapping += a < lo + 128 && lo < b;
    EXPECT_EQ(overlapping, 1u) << "record " << (void*)r << " shares a line pair";
  }
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  for (Record* r : records) slabs.destroy_aligned(r);
  for (auto [p, n] : plain) slabs.free(p, n);
  EXPECT_EQ(slabs.live_allocations(), 0u);
  EXPECT_EQ(slabs.allocated_bytes(), 0u);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

TEST(SlabAllocator, FreedSlotsAreReusedBeforeNewPages) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = false});
  ASSERT_TRUE(slabs.ok());
  std::vector<void*> v;
  for (int i = 0; i < 1000; i++) v.push_back(slabs.allocate(kHeaderBytes));
  EXPECT_EQ(std::set<void*>(v.begin(), v.end()).size(), 1000u);
  for (void* p : v) EXPECT_TRUE(is_aligned(p, 16));
  size_t committed = slabs.committed_bytes();
  EXPECT_GE(committed, 1000 * kHeaderBytes);
  EXPECT_LE(committed, 1000 * kHeaderBytes * 5 / 4 + 4096);
  for (size_t i = 0; i < v.size(); i += 2) slabs.free(v[i], kHeaderBytes);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  for (size_t i = 0; i < v.size(); i += 2) v[i] = slabs.allocate(kHeaderBytes);
  EXPECT_EQ(slabs.committed_bytes(), committed) << "the freed slots served the new objects";
  EXPECT_EQ(slabs.live_allocations(), 1000u);
  EXPECT_EQ(slabs.allocated_bytes(), 1000 * kHeaderBytes);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  for (void* p : v) slabs.free(p, kHeaderBytes);
  EXPECT_EQ(slabs.live_allocations(), 0u);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

TEST(SlabAllocator, LargeObjectsTakeWholePages) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = true});
  void* a = slabs.allocate(10 * KiB);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 10 * KiB);
  EXPECT_GE(slabs.committed_bytes(), 12 * KiB);
  void* b = slabs.allocate(SlabAllocator::kLargestSlabObject);
  ASSERT_NE(b, nullptr);
  slabs.free(a, 10 * KiB);
  slabs.free(b, SlabAllocator::kLargestSlabObject);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  // Aggressive: nothing but the free-page stack stays committed.
  EXPECT_LE(slabs.committed_bytes(), 4096u);
}

// The page store's bitmap: the bits of its first pages live in the store object, so a small
// bookkeeping holds only its slab pages; the bitmap's first page is counted once bookkeeping
// outgrows them, and goes back with the pages beyond.
TEST(SlabAllocator, SmallBookkeepingHoldsNoBitmapPage) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = false});
  ASSERT_TRUE(slabs.ok());
  size_t page = 4096;
  void* one = slabs.allocate(page);  // one whole page
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(slabs.committed_bytes(), page) << "the page and no bitmap page";
  std::vector<void*> pages;
  for (int i = 0; i < 600; i++) {
    pages.push_back(slabs.allocate(page));
    ASSERT_NE(pages.back(), nullptr);
  }
  EXPECT_EQ(slabs.committed_bytes(), 602 * page) << "601 pages and the bitmap's first page";
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  for (void* p : pages) slabs.free(p, page);
  slabs.purge();
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  EXPECT_EQ(slabs.committed_bytes(), page) << "the bitmap page went back with the pages";
  slabs.free(one, page);
  slabs.purge();
  EXPECT_EQ(slabs.committed_bytes(), 0u);
}

struct Rss {
  size_t before, touched, freed, purged;
};

Rss churn(bool return_at_once) {
  SlabAllocator slabs({.reserve_bytes = 256 * MiB, .return_at_once = return_at_once});
  Rss r{};
  std::vector<void*> v(32 * MiB / kHeaderBytes);  // resident before the first figure
  r.before = proc_memory::resident_bytes();
  for (void*& p : v) {
    p = slabs.allocate(kHeaderBytes);
    std::memset(p, 0x5A, kHeaderBytes);
  }
  r.touched = proc_memory::resident_bytes();
  for (void* p : v) slabs.free(p, kHeaderBytes);
  r.freed = proc_memory::resident_bytes();
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  slabs.purge();
  r.purged = proc_memory::resident_bytes();
  EXPECT_LE(slabs.committed_bytes(), 64 * KiB) << "only the free-page stack stays";
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  return r;
}

TEST(SlabAllocator, EmptyPagesLeaveTheResidentSetOnPurge) {
  Rss r = churn(false);
  ASSERT_GE(r.touched, r.before + 30 * MiB) << "the objects were touched";
  EXPECT_GE(r.freed, r.touched - 2 * MiB) << "balanced: empty pages wait for the purge";
  EXPECT_LE(r.purged, r.before + 1 * MiB) << "purge gave the pages back";
}

TEST(SlabAllocator, AggressiveReturnsPagesAtOnce) {
  Rss r = churn(true);
  ASSERT_GE(r.touched, r.before + 30 * MiB);
  EXPECT_LE(r.freed, r.before + 1 * MiB) << "each page went back when its last object did";
}

TEST(SlabAllocator, InjectedFailureChangesNothing) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = false});
  void* keep = slabs.allocate(kHeaderBytes);
  size_t committed = slabs.committed_bytes();
  os::inject_fault(os::FaultPoint::kBookkeeping, 1);
  EXPECT_EQ(slabs.allocate(kHeaderBytes), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(slabs.committed_bytes(), committed);
  EXPECT_EQ(slabs.live_allocations(), 1u);
  EXPECT_NE(slabs.allocate(kHeaderBytes), nullptr) << "one failure only";
  slabs.free(keep, kHeaderBytes);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

TEST(SlabAllocator, ExhaustedRangeIsOutOfMemory) {
  SlabAllocator slabs({.reserve_bytes = 1 * MiB, .return_at_once = false});
  size_t n = 0;
  while (slabs.allocate(64 * KiB) != nullptr) n++;
  EXPECT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY) << ms_last_error_text();
  EXPECT_GT(n, 10u);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

}  // namespace
}  // namespace metaspace
