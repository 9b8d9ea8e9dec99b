// Layer 3: the chunk start table's 4-byte slots name a chunk header by its offset from the
// header base (the chunk layer's slab range) in 16-byte units. A slot that lost the high bits of
// the offset, or a page index off by one at the node's last unit, would name the wrong header or
// none, exactly at the edges: the first and last unit of a node, headers at the lowest and the
// highest offset a slot can name.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "chunks/chunk.hpp"
#include "common/units.hpp"
#include "os/os_memory.hpp"
#include "slab/slab_allocator.hpp"
#include "vspace/chunk_start_table.hpp"
#include "vspace/node_bookkeeping.hpp"

namespace metaspace {
namespace {

constexpr size_t kRange = 64 * MiB;
constexpr size_t kUnit = 1 * KiB;
constexpr size_t kRoot = 4 * MiB;

struct Table {
  std::atomic<size_t> committed{0};
  NodeBookkeeping bookkeeping;
  ChunkStartTable starts;
  // The node's range is only computed with, never touched: any root-aligned address will do.
  const char* node = reinterpret_cast<const char*>(uintptr_t{1} << 40);

  explicit Table(const char* header_base, ChunkStartTable::Options options = {}) {
    EXPECT_EQ(bookkeeping.init({.range_bytes = kRange, .granule_bytes = 4 * KiB,
                                .root_bytes = kRoot, .unit_bytes = kUnit},
                               &committed),
              MS_OK);
    starts.init(node, kRange, kUnit, kRoot, bookkeeping.slots(),
                bookkeeping.table_page_states(), bookkeeping.root_slots(), &bookkeeping, options);
    starts.set_header_base(header_base);
  }
};

// First and last unit of the node, first and last root area: each header found from its chunk's
// first and last byte, nothing found from the free room between.
void expect_edges(Table& t, Chunk* first, Chunk* last) {
  const size_t page = os::page_size();
  const char* last_unit = t.node + kRange - kUnit;
  t.starts.set(t.node, kUnit, first);
  t.starts.set(last_unit, kUnit, last);
  EXPECT_EQ(t.starts.at(t.node), first);
  EXPECT_EQ(t.starts.at(last_unit), last);
  EXPECT_EQ(t.starts.find(t.node), first);
  EXPECT_EQ(t.starts.find(t.node + kUnit - 1), first);
  EXPECT_EQ(t.starts.find(last_unit), last);
  EXPECT_EQ(t.starts.find(t.node + kRange - 1), last);
  // Below the last unit, in its root area: no start at any aligned candidate but the area's...
  EXPECT_EQ(t.starts.find(last_unit - 1), nullptr);
  // ... and in the first area above the first unit the nearest start below is the first chunk
  // (the chunk layer refuses it by its end).
  EXPECT_EQ(t.starts.find(t.node + kRoot - 1), first);
  // Two pages of slots: the first and the last of the node's (1 024 four-byte slots, 1 MiB of
  // node each at 4 KiB pages).
  EXPECT_EQ(t.starts.slot_pages(), kRange / kUnit * sizeof(ChunkStartTable::Slot) / page);
  EXPECT_EQ(t.starts.committed_bytes(), 2 * page);
  EXPECT_TRUE(t.starts.verify());
  t.starts.clear(t.node);
  t.starts.clear(last_unit);
  EXPECT_EQ(t.starts.find(t.node + kRange - 1), nullptr);
  EXPECT_EQ(t.starts.purge(), 2 * page);
  EXPECT_EQ(t.starts.committed_bytes(), 0u);
  EXPECT_TRUE(t.starts.verify());
}

// A chunk that is a whole root area records its start in the area's root slot, in the node's
// header, not on a page of slots: found from its first and last byte, no slot page counted; and a
// chunk that grows to a whole area in place moves its start there.
TEST(ChunkStartTable, WholeAreaChunksTakeNoSlotPage) {
  SlabAllocator slabs({.reserve_bytes = 16 * MiB, .return_at_once = false});
  Table t(slabs.range_base());
  Chunk* a = slabs.create<Chunk>();
  Chunk* b = slabs.create<Chunk>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const size_t header = t.bookkeeping.header_bytes();
  const char* second_area = t.node + kRoot;
  t.starts.set(second_area, kRoot, a);
  EXPECT_EQ(t.starts.committed_bytes(), 0u) << "no page of slots";
  EXPECT_EQ(t.bookkeeping.header_bytes(), header + os::page_size())
      << "the header page holding the root slots";
  EXPECT_EQ(t.starts.at(second_area), a);
  EXPECT_EQ(t.starts.find(second_area), a);
  EXPECT_EQ(t.starts.find(second_area + kRoot / 2 + 3), a);
  EXPECT_EQ(t.starts.find(second_area + kRoot - 1), a);
  EXPECT_EQ(t.starts.find(second_area + kRoot), nullptr) << "the next area has nothing";
  EXPECT_TRUE(t.starts.verify());
  t.starts.clear(second_area);
  EXPECT_EQ(t.starts.find(second_area + kRoot - 1), nullptr);
  EXPECT_EQ(t.starts.at(second_area), nullptr);

  // Half an area at its base (a slot page), grown to the whole area: the page empties.
  t.starts.set(second_area, kRoot / 2, b);
  EXPECT_EQ(t.starts.committed_bytes(), os::page_size());
  EXPECT_EQ(t.starts.find(second_area + kRoot / 2 - 1), b);
  t.starts.set_root_start(second_area, b);
  EXPECT_EQ(t.starts.find(second_area + kRoot - 1), b);
  EXPECT_EQ(t.starts.at(second_area), b);
  EXPECT_TRUE(t.starts.verify());
  EXPECT_EQ(t.starts.purge(), os::page_size()) << "the emptied page goes back";
  t.starts.clear(second_area);
  EXPECT_EQ(t.starts.find(second_area), nullptr);
  EXPECT_TRUE(t.starts.verify());
  slabs.destroy(a);
  slabs.destroy(b);
}

// The non-class order: an area's 1 024 chunks of 4 KiB start on one page of slots; a 1 KiB chunk
// off the multiples of 4 KiB takes another. Both orders map every piece of an area to a slot of
// its own: all 4 096 pieces of 1 KiB at once are each found again from their first and last
// byte, on the area's 4 pages.
TEST(ChunkStartTable, SlotOrdersPlaceEveryPieceOnASlotOfItsOwn) {
  SlabAllocator slabs({.reserve_bytes = 16 * MiB, .return_at_once = false});
  constexpr size_t kPieces = kRoot / kUnit;
  std::vector<Chunk*> headers;
  for (size_t i = 0; i < kPieces; i++) {
    headers.push_back(slabs.create<Chunk>());
    ASSERT_NE(headers.back(), nullptr);
  }
  const size_t page = os::page_size();
  for (auto order : {ChunkStartTable::SlotOrder::kHeadFirst,
                     ChunkStartTable::SlotOrder::kAlignedFirst}) {
    SCOPED_TRACE(static_cast<int>(order));
    Table t(slabs.range_base(), {.order = order});
    const char* area = t.node + kRoot;
    if (order == ChunkStartTable::SlotOrder::kAlignedFirst && page == 4 * KiB) {
      // 4 KiB chunks everywhere but in [0, 4 KiB), where a 1 KiB chunk lies at +1 KiB.
      for (size_t at = 4 * KiB; at < kRoot; at += 4 * KiB) {
        t.starts.set(area + at, 4 * KiB, headers[at / kUnit]);
      }
      EXPECT_EQ(t.starts.committed_bytes(), page) << "every 4 KiB chunk on the first page";
      t.starts.set(area + 1 * KiB, kUnit, headers[1]);
      EXPECT_EQ(t.starts.committed_bytes(), 2 * page);
      EXPECT_EQ(t.starts.find(area + 2 * KiB - 1), headers[1]);
      EXPECT_EQ(t.starts.find(area + 1 * KiB - 1), nullptr);
      EXPECT_EQ(t.starts.find(area + kRoot - 1), headers[kPieces - 4]);
      for (size_t at = 4 * KiB; at < kRoot; at += 4 * KiB) t.starts.clear(area + at);
      t.starts.clear(area + 1 * KiB);
      t.starts.purge();
    }
    for (size_t i = 0; i < kPieces; i++) t.starts.set(area + i * kUnit, kUnit, headers[i]);
    EXPECT_EQ(t.starts.committed_bytes(), kPieces * sizeof(ChunkStartTable::Slot) / page * page);
    for (size_t i = 0; i < kPieces; i++) {
      ASSERT_EQ(t.starts.find(area + i * kUnit), headers[i]) << i;
      ASSERT_EQ(t.starts.find(area + (i + 1) * kUnit - 1), headers[i]) << i;
    }
    EXPECT_TRUE(t.starts.verify());
    for (size_t i = 0; i < kPieces; i++) t.starts.clear(area + i * kUnit);
    EXPECT_TRUE(t.starts.verify());
  }
  for (Chunk* c : headers) slabs.destroy(c);
}

TEST(ChunkStartTable, HeadersFromTheSlabsAtTheNodesFirstAndLastUnit) {
  SlabAllocator slabs({.reserve_bytes = 256 * MiB, .return_at_once = false});
  ASSERT_TRUE(slabs.ok());
  Chunk* a = slabs.create<Chunk>();
  Chunk* b = slabs.create<Chunk>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Table t(slabs.range_base());
  expect_edges(t, a, b);
  slabs.destroy(a);
  slabs.destroy(b);
}

TEST(ChunkStartTable, LowestAndHighestHeaderOffsetsASlotNames) {
  // Two headers: with the base 16 bytes below the first, the first is slot value 1; with the
  // base just far enough below the second, the second is slot value 2^32 − 1.
  struct alignas(16) Header {
    Chunk chunk;
  } headers[2];
  char* low = reinterpret_cast<char*>(&headers[0].chunk);
  char* high = reinterpret_cast<char*>(&headers[1].chunk);
  ASSERT_EQ(high - low, static_cast<ptrdiff_t>(sizeof(Header)));
  {
    Table t(low - 16);
    expect_edges(t, &headers[0].chunk, &headers[1].chunk);
  }
  {
    Table t(high - (ChunkStartTable::kHeaderRangeBytes - 16));
    expect_edges(t, &headers[1].chunk, &headers[0].chunk);
  }
}

}  // namespace
}  // namespace metaspace
