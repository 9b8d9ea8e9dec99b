// Layer 3: the nodes' own bookkeeping (commit masks, area flags, chunk start tables, the node
// map) lives in ranges the library maps itself, is counted, and goes back: when a page of chunk
// starts empties, when a node is removed, when the node map is rebuilt. And the node map stays
// bounded however many nodes come and go.
#include <gtest/gtest.h>

#include <vector>

#include "chunks/chunk_manager.hpp"
#include "common/units.hpp"
#include "os/os_memory.hpp"
#include "support/layer_fixtures.hpp"
#include "vspace/chunk_start_table.hpp"
#include "vspace/node_map.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {
namespace {

constexpr NodeGeometry kGeometry{.reserve_bytes = 64 * MiB,
                                 .root_chunk_bytes = 4 * MiB,
                                 .granule_bytes = 4 * KiB,
                                 .protect_uncommitted = false};

TEST(NodeBookkeeping, CountedPerNodeAndReturnedWithIt) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
  ASSERT_TRUE(list.ok());
  size_t map_only = list.bookkeeping_bytes();
  EXPECT_EQ(map_only, 0u) << "no node map table while one node is found by its range";
  VirtualSpaceNode* node = nullptr;
  ASSERT_NE(list.allocate_root_chunk(&node), nullptr) << ms_last_error_text();
  // The header (2 KiB of mask, 16 area flags, 64 page states: one page) is counted once written.
  EXPECT_EQ(node->bookkeeping_bytes(), 0u) << "nothing written yet";
  ASSERT_EQ(node->ensure_committed(node->base(), 4 * KiB), MS_OK);
  EXPECT_EQ(list.bookkeeping_bytes(), map_only + os::page_size());
  EXPECT_EQ(node->bookkeeping_bytes(), os::page_size());
  ASSERT_EQ(node->uncommit(node->base(), 4 * KiB), MS_OK);
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
  ASSERT_EQ(list.remove_node(node), MS_OK);
  EXPECT_EQ(list.bookkeeping_bytes(), map_only) << "the node's range went with it";
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
}

// The first node of an expandable list is found by its range, with no map table; the second puts
// both in the map (a page, counted), and from then on the map is used, also once one is left.
TEST(NodeBookkeeping, MapTableOnlyFromTheSecondNode) {
  CommitLimiter limiter(0);
  VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
  ASSERT_TRUE(list.ok());
  const size_t page = os::page_size();
  auto found_at_edges = [&](const VirtualSpaceNode* n) {
    return list.node_containing(n->base()) == n && list.node_containing(n->end() - 1) == n;
  };
  VirtualSpaceNode* first = nullptr;
  ASSERT_NE(list.allocate_root_chunk(&first), nullptr) << ms_last_error_text();
  EXPECT_TRUE(found_at_edges(first));
  EXPECT_EQ(list.node_containing(first->base() - 1), nullptr);
  EXPECT_EQ(list.node_containing(first->end()), nullptr);
  EXPECT_EQ(list.bookkeeping_bytes(), 0u);
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
  // Fill the first node's root areas: the next one comes from a second node.
  VirtualSpaceNode* second = first;
  while (second == first) ASSERT_NE(list.allocate_root_chunk(&second), nullptr);
  EXPECT_TRUE(found_at_edges(first));
  EXPECT_TRUE(found_at_edges(second));
  EXPECT_EQ(list.bookkeeping_bytes(), page) << "the map's first table";
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
  ASSERT_EQ(list.remove_node(second), MS_OK);
  EXPECT_TRUE(found_at_edges(first)) << "through the map";
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
  const char* first_base = first->base();
  ASSERT_EQ(list.remove_node(first), MS_OK);
  EXPECT_EQ(list.node_containing(first_base), nullptr);
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
  VirtualSpaceNode* third = nullptr;
  ASSERT_NE(list.allocate_root_chunk(&third), nullptr) << ms_last_error_text();
  EXPECT_TRUE(found_at_edges(third));
  EXPECT_EQ(list.bookkeeping_bytes(), page) << "the map's table stays in use";
  EXPECT_TRUE(list.verify()) << ms_last_error_text();
}

// A root area's first page of chunk start slots holds its first 896 KiB and every chunk of 32 KiB
// or more beyond (the slot order of chunk_start_table.hpp; 4 KiB pages, 1 KiB per 4-byte slot,
// 4 MiB areas): a page is counted from its first in-use chunk's start on, given back once the
// in-use chunks starting there came back: by the next purge, or at once under the aggressive
// policy. Free chunks record no start, so the
// free halves a split leaves cost no page, and a lookup in one finds nothing.
void split_merge_and_count(ms_reclaim_t reclaim) {
  test::Space space{test::SpaceConfig{.reclaim = reclaim, .node_bytes = 64 * MiB,
                                      .granule_bytes = 4 * KiB}};
  const size_t page = os::page_size();
  if (page != 4 * KiB) GTEST_SKIP() << "figures for 4 KiB pages";
  Chunk* held = space.chunks.get_chunk(0, 0, 0);  // keeps the node
  ASSERT_NE(held, nullptr) << ms_last_error_text();
  size_t baseline = space.vslist.bookkeeping_bytes();
  VirtualSpaceNode* node = space.vslist.node_containing(held->base);
  ASSERT_NE(node, nullptr);
  const ChunkStartTable& starts = node->chunk_starts();
  // A 1 KiB chunk in the next root area: its start is the first page of that area's slots; the
  // free halves the split left at +2M, +1M, +512K ... +1K record nothing, so no more pages.
  Chunk* small = space.chunks.get_chunk(12, 12, 0);
  ASSERT_NE(small, nullptr) << ms_last_error_text();
  char* area = small->base;
  EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline + page);
  EXPECT_TRUE(space.consistent());
  EXPECT_EQ(space.chunks.chunk_containing(small->base + 100), small);
  EXPECT_EQ(space.chunks.chunk_containing(small->end() - 1), small);
  for (size_t free_at : {1 * KiB, 2 * KiB, 512 * KiB, 1 * MiB, 2 * MiB}) {
    SCOPED_TRACE(free_at);
    EXPECT_EQ(starts.at(area + free_at), nullptr) << "a free chunk records no start";
    EXPECT_EQ(space.chunks.chunk_containing(area + free_at), nullptr);
    EXPECT_EQ(space.chunks.chunk_containing(area + free_at + 100), nullptr);
    EXPECT_EQ(space.chunks.chunk_containing(area + 2 * free_at - 1), nullptr);
  }
  // The free 2 MiB half handed out, 2 MiB above: in address order its slot was a page of its
  // own; it shares the area's first page with the chunk at the area's base. A lookup in the free
  // room below it (+1M .. +2M) still finds nothing, though the nearest start below is small's.
  Chunk* big = space.chunks.get_chunk(1, 1, 0);
  ASSERT_NE(big, nullptr) << ms_last_error_text();
  ASSERT_EQ(big->base, area + 2 * MiB);
  EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline + page) << "the area's first page";
  EXPECT_EQ(space.chunks.chunk_containing(big->end() - 1), big);
  EXPECT_EQ(space.chunks.chunk_containing(area + 2 * MiB - 1), nullptr);
  EXPECT_EQ(starts.find(area + 2 * MiB - 1), small) << "the candidate the end check refuses";
  // The free 1 KiB buddy at +1K: in the area's first 896 KiB, the same page.
  Chunk* odd = space.chunks.get_chunk(12, 12, 0);
  ASSERT_NE(odd, nullptr) << ms_last_error_text();
  ASSERT_EQ(odd->base, area + 1 * KiB);
  EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline + page);
  EXPECT_EQ(space.chunks.chunk_containing(odd->base), odd);
  EXPECT_EQ(space.chunks.chunk_containing(odd->end() - 1), odd);
  EXPECT_EQ(space.chunks.chunk_containing(small->end() - 1), small);
  EXPECT_TRUE(space.consistent());
  ASSERT_EQ(space.chunks.return_chunk(small), MS_OK);
  ASSERT_EQ(space.chunks.return_chunk(big), MS_OK);
  EXPECT_EQ(starts.at(area), nullptr) << "cleared when the chunk came back";
  EXPECT_EQ(space.chunks.chunk_containing(area + 100), nullptr);
  ASSERT_EQ(space.chunks.return_chunk(odd), MS_OK);
  EXPECT_TRUE(space.consistent());
  if (reclaim == MS_RECLAIM_AGGRESSIVE) {
    EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline) << "the page went at once";
  } else {
    EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline + page) << "kept until purge";
    space.chunks.purge();
    EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline) << "purged: the page went";
  }
  EXPECT_TRUE(space.consistent());
  ASSERT_EQ(space.chunks.return_chunk(held), MS_OK);
}

// Every chunk of 32 KiB or more in a root area has its start on the area's first page of slots:
// the 128 chunks of 32 KiB that fill an area keep one page (address order: 4), and a lookup finds
// each from its first and last byte. The 512 chunks of 8 KiB and the 1 024 of 4 KiB that fill it
// keep 4 pages, as in address order (those beyond the first 896 KiB off the multiples of 32 KiB
// lie on the other three), and so do its 4 096 chunks of 1 KiB, each found by its own slot. The node's other 15
// areas as 4 MiB root chunks: no page, their starts lie in the node's header (root slots).
// A 64 MiB node at 4 KiB granules, kept by a whole-area chunk, and the bookkeeping it holds then.
struct HeldNode {
  test::Space space{test::SpaceConfig{.node_bytes = 64 * MiB, .granule_bytes = 4 * KiB}};
  Chunk* held = space.chunks.get_chunk(0, 0, 0);
  size_t baseline = space.vslist.bookkeeping_bytes();
};

TEST(NodeBookkeeping, LargerChunksShareTheAreasFirstStartPage) {
  const size_t page = os::page_size();
  if (page != 4 * KiB) GTEST_SKIP() << "figures for 4 KiB pages";
  HeldNode node;
  test::Space& space = node.space;
  Chunk* held = node.held;
  ASSERT_NE(held, nullptr) << ms_last_error_text();
  const size_t baseline = node.baseline;
  auto fill_area = [&](size_t chunk_bytes, size_t pages) {
    SCOPED_TRACE(chunk_bytes);
    const int level = static_cast<int>(log2_of_power_of_2(4 * MiB / chunk_bytes));
    std::vector<Chunk*> chunks;
    for (size_t i = 0; i < 4 * MiB / chunk_bytes; i++) {
      Chunk* c = space.chunks.get_chunk(level, level, 0);
      ASSERT_NE(c, nullptr) << ms_last_error_text();
      // All in one area (the held chunk keeps the node's first).
      if (!chunks.empty()) {
        ASSERT_EQ(align_down(c->base, 4 * MiB), align_down(chunks[0]->base, 4 * MiB));
      }
      chunks.push_back(c);
    }
    EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline + pages * page);
    for (Chunk* c : chunks) {
      ASSERT_EQ(space.chunks.chunk_containing(c->base), c);
      ASSERT_EQ(space.chunks.chunk_containing(c->end() - 1), c);
    }
    EXPECT_TRUE(space.consistent());
    for (Chunk* c : chunks) ASSERT_EQ(space.chunks.return_chunk(c), MS_OK);
    space.chunks.purge();
    EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline);
  };
  fill_area(32 * KiB, 1);
  fill_area(8 * KiB, 4);
  fill_area(4 * KiB, 4);
  fill_area(1 * KiB, 4);  // every piece of the area: each has a slot of its own
  std::vector<Chunk*> chunks;
  for (int i = 0; i < 15; i++) {
    Chunk* c = space.chunks.get_chunk(0, 0, 0);
    ASSERT_NE(c, nullptr) << ms_last_error_text();
    ASSERT_EQ(space.vslist.node_containing(c->base), space.vslist.node_containing(held->base));
    chunks.push_back(c);
  }
  EXPECT_EQ(space.vslist.bookkeeping_bytes(), baseline) << "no page for whole-area chunks";
  for (Chunk* c : chunks) {
    ASSERT_EQ(space.chunks.chunk_containing(c->base + 12345), c);
    ASSERT_EQ(space.chunks.chunk_containing(c->end() - 1), c);
    ASSERT_EQ(space.chunks.return_chunk(c), MS_OK);
  }
  EXPECT_TRUE(space.consistent());
  ASSERT_EQ(space.chunks.return_chunk(held), MS_OK);
}

// A chunk that grows in place to a whole root area moves its start to the area's root slot: the
// slot page it held empties (and goes on purge), and lookups find it all the way.
TEST(NodeBookkeeping, ChunkGrownToAWholeAreaLeavesItsStartPage) {
  if (os::page_size() != 4 * KiB) GTEST_SKIP() << "figures for 4 KiB pages";
  HeldNode node;
  ChunkManager& chunks = node.space.chunks;
  ASSERT_NE(node.held, nullptr) << ms_last_error_text();
  Chunk* c = chunks.get_chunk(1, 1, 0);
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_EQ(node.space.vslist.bookkeeping_bytes(), node.baseline + 4 * KiB)
      << "half an area: a slot page";
  ASSERT_TRUE(chunks.attempt_enlarge(c));
  ASSERT_EQ(c->level, 0);
  EXPECT_TRUE(node.space.consistent());
  for (const char* p : {c->base, c->base + 3 * MiB, c->end() - 1}) {
    EXPECT_EQ(chunks.chunk_containing(p), c);
  }
  chunks.purge();
  EXPECT_EQ(node.space.vslist.bookkeeping_bytes(), node.baseline) << "the emptied slot page went";
  ASSERT_EQ(chunks.return_chunk(c), MS_OK);
  EXPECT_TRUE(node.space.consistent());
  EXPECT_EQ(chunks.chunk_containing(c->base + 3 * MiB), nullptr);
  ASSERT_EQ(chunks.return_chunk(node.held), MS_OK);
}

TEST(NodeBookkeeping, ChunkStartPagesGoBackOnPurge) {
  split_merge_and_count(MS_RECLAIM_BALANCED);
}

TEST(NodeBookkeeping, ChunkStartPagesGoBackAtOnceWhenAggressive) {
  split_merge_and_count(MS_RECLAIM_AGGRESSIVE);
}

// Nodes come and go at ever new addresses: the map is rebuilt now and then (dropping the
// tombstones) but holds one table of a size set by the live nodes, not by how many there were.
TEST(NodeMap, BoundedUnderChurn) {
  std::atomic<size_t> committed{0};
  {
    NodeMap map(4 * MiB, &committed);
    ASSERT_EQ(map.init(), MS_OK);
    test::ReservedRange range(4 * GiB, 4 * MiB);
    auto* node = reinterpret_cast<VirtualSpaceNode*>(&committed);  // only stored and compared
    // Three live nodes of 16 areas at a time; 2 000 nodes in all over 1 000 addresses.
    std::vector<char*> live;
    size_t max_slots = 0;
    for (int i = 0; i < 2000; i++) {
      char* base = range.base() + static_cast<size_t>(i % 1000) * 4 * MiB;
      if (live.size() == 3) {
        map.remove(live.front(), 4 * MiB);
        live.erase(live.begin());
      }
      // Node bases are root-chunk aligned; one area each here (the range is not wide enough).
      ASSERT_EQ(map.add(base, 4 * MiB, node), MS_OK);
      live.push_back(base);
      for (char* b : live) ASSERT_EQ(map.find(b + 123), node);
      ASSERT_EQ(map.find(range.base() + 1001 * 4 * MiB), nullptr);
      ASSERT_TRUE(map.verify()) << ms_last_error_text();
      max_slots = std::max(max_slots, map.slots());
    }
    EXPECT_EQ(map.entries(), 3u);
    EXPECT_EQ(max_slots, NodeMap::kInitialSlots) << "never larger than the live keys need";
    EXPECT_GT(map.rebuilds(), 20u) << "tombstones were dropped by rebuilds";
    EXPECT_EQ(committed.load(), os::page_size()) << "one table page, the old ones returned";
    EXPECT_EQ(map.committed_bytes(), committed.load());
  }
  EXPECT_EQ(committed.load(), 0u) << "everything uncounted when the map dies";
}

// A map over 256 MiB of reserved range, with root areas of `area` bytes.
struct MapOver256MiB {
  explicit MapOver256MiB(size_t area) : map(area, &committed), range(256 * MiB, area) {
    EXPECT_EQ(map.init(), MS_OK) << ms_last_error_text();
  }
  std::atomic<size_t> committed{0};
  NodeMap map;
  test::ReservedRange range;
  VirtualSpaceNode* node = reinterpret_cast<VirtualSpaceNode*>(&committed);  // only compared
};

TEST(NodeMap, GrowsWithLiveNodesAndShrinksBack) {
  MapOver256MiB f(64 * KiB);
  auto& [committed, map, range, node] = f;
  // 4 096 areas of 64 KiB: 16 384 slots (256 KiB) at a quarter full.
  ASSERT_EQ(map.add(range.base(), 256 * MiB, node), MS_OK);
  EXPECT_EQ(map.slots(), 16384u);
  EXPECT_EQ(map.committed_bytes(), 16384 * 16u);
  EXPECT_EQ(map.find(range.base() + 256 * MiB - 1), node);
  map.remove(range.base(), 256 * MiB);
  EXPECT_EQ(map.find(range.base()), nullptr);
  EXPECT_EQ(map.slots(), NodeMap::kInitialSlots) << "rebuilt small once the nodes went";
  EXPECT_EQ(committed.load(), os::page_size()) << "the big table's pages went back";
  ASSERT_EQ(map.add(range.base(), 64 * KiB, node), MS_OK);
  EXPECT_EQ(map.find(range.base()), node);
  EXPECT_TRUE(map.verify()) << ms_last_error_text();
}

// A rebuild whose fresh table cannot be made usable leaves the map as it was.
TEST(NodeMap, FailedRebuildChangesNothing) {
  MapOver256MiB f(4 * MiB);
  auto& [committed, map, range, node] = f;
  ASSERT_EQ(map.add(range.base(), 64 * MiB, node), MS_OK);  // 16 of 32 keys at most
  {
    test::FaultGuard fault(os::FaultPoint::kCommit, 1);
    EXPECT_EQ(map.add(range.base() + 64 * MiB, 128 * MiB, node), MS_ERR_COMMIT_FAILED);
  }
  EXPECT_EQ(map.entries(), 16u);
  EXPECT_EQ(map.find(range.base() + 64 * MiB), nullptr);
  EXPECT_EQ(map.find(range.base()), node);
  EXPECT_TRUE(map.verify()) << ms_last_error_text();
  ASSERT_EQ(map.add(range.base() + 64 * MiB, 128 * MiB, node), MS_OK);
  EXPECT_EQ(map.find(range.base() + 191 * MiB), node);
}

}  // namespace
}  // namespace metaspace
