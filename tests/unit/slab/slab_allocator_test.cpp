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

// Structures of 304 bytes and more share pages whatever their size: the sizes a metaspace makes
// one or two of (arenas, a free-block structure, its medium bins) take one page, not one each.
TEST(SlabAllocator, LargerStructuresOfEverySizeShareAPage) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = true});
  const size_t sizes[] = {304, 672, 2016, 300};  // arenas, free blocks, medium bins, arenas
  std::vector<void*> v;
  for (size_t bytes : sizes) {
    v.push_back(slabs.allocate(bytes));
    ASSERT_NE(v.back(), nullptr);
    std::memset(v.back(), 0x33, bytes);
  }
  EXPECT_EQ(slabs.committed_bytes(), 4096u) << "one page for 3 292 bytes";
  SlabAllocator::Usage u = slabs.usage();
  EXPECT_EQ(u.shared_pages, 1u);
  EXPECT_EQ(u.class_count, 0) << "no slab of their own";
  ASSERT_EQ(u.shared_class_count, 3);
  EXPECT_EQ(u.shared_classes[0].object_bytes, 304u);
  EXPECT_EQ(u.shared_classes[0].objects, 2u);
  EXPECT_EQ(u.pages(), 1u);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();

  // A freed object serves the next request of its class, in place.
  slabs.free(v[1], 672);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  EXPECT_EQ(slabs.allocate(600), v[1]);
  // The page goes back with its last object, free objects and all.
  for (size_t i = 0; i < v.size(); i++) slabs.free(v[i], sizes[i] == 672 ? 600 : sizes[i]);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  EXPECT_EQ(slabs.committed_bytes(), 0u);
  EXPECT_EQ(slabs.usage().shared_pages, 0u);
  // And a fresh page after it is clean: the lists forgot the page's objects.
  void* again = slabs.allocate(2016);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(slabs.committed_bytes(), 4096u);
  slabs.free(again, 2016);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
}

// Every slab and shared page carries the allocator's page owner in its header, so an object finds
// what it belongs to from its own address (a loader object its environment): objects of a slab
// class on many pages, and shared-page objects, before and after pages were given back and made
// again.
TEST(SlabAllocator, EveryPageNamesItsOwner) {
  int owner = 0;
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = true});
  slabs.set_page_owner(&owner);
  std::vector<std::pair<void*, size_t>> v;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 100; i++) {  // 128-byte objects: 31 to a page, so 4 pages
      v.emplace_back(slabs.allocate(128), 128);
      v.emplace_back(slabs.allocate(i % 2 ? 304 : 672), i % 2 ? 304 : 672);
    }
    for (auto [p, bytes] : v) {
      ASSERT_NE(p, nullptr) << ms_last_error_text();
      EXPECT_EQ(SlabAllocator::page_owner_of(p), &owner) << bytes << "-byte object " << p;
    }
    EXPECT_GE(slabs.usage().pages(), 4u + 12u);
    for (auto [p, bytes] : v) slabs.free(p, bytes);
    v.clear();
    EXPECT_EQ(slabs.committed_bytes(), 0u) << "every page went back";
    EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  }
}

// Random structures of the shared sizes, freed in random order: objects never overlap (each
// keeps its pattern until freed), the lists stay sound after every step, and every page goes
// back at the end.
TEST(SlabAllocator, SharedPagesUnderRandomChurn) {
  SlabAllocator slabs({.reserve_bytes = 64 * MiB, .return_at_once = false});
  struct Object {
    unsigned char* p;
    size_t bytes;
    unsigned char pattern;
  };
  std::vector<Object> live;
  uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  auto check_and_free = [&](size_t i) {
    Object o = live[i];
    for (size_t k = 0; k < o.bytes; k++) ASSERT_EQ(o.p[k], o.pattern) << "object " << (void*)o.p;
    slabs.free(o.p, o.bytes);
    live[i] = live.back();
    live.pop_back();
  };
  for (int step = 0; step < 6000; step++) {
    if (live.size() < 200 && next() % 3 != 0) {
      size_t bytes = 257 + next() % (2016 - 257 + 1);
      auto* p = static_cast<unsigned char*>(slabs.allocate(bytes));
      ASSERT_NE(p, nullptr);
      unsigned char pattern = static_cast<unsigned char>(step);
      std::memset(p, pattern, bytes);
      live.push_back({p, bytes, pattern});
    } else if (!live.empty()) {
      check_and_free(next() % live.size());
    }
    if (step % 50 == 0) ASSERT_TRUE(slabs.verify()) << ms_last_error_text();
  }
  while (!live.empty()) check_and_free(live.size() - 1);
  EXPECT_TRUE(slabs.verify()) << ms_last_error_text();
  EXPECT_EQ(slabs.usage().shared_pages, 0u);
  EXPECT_EQ(slabs.live_allocations(), 0u);
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
