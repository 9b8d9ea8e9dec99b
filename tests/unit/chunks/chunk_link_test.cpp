// A chunk header's links are 4-byte distances from the link's own 16-byte line (ChunkLink): they
// must name the same header wherever the two lie in a bookkeeping range, survive assignment from
// another link (which copies the target, not the distance) and read null as null.
#include "chunks/chunk.hpp"

#include <gtest/gtest.h>

#include <new>
#include <vector>

#include "common/units.hpp"
#include "os/os_memory.hpp"
#include "slab/slab_allocator.hpp"
#include "support/layer_fixtures.hpp"

namespace metaspace {
namespace {

// Links `from` to `to` and back on both lists (free or arena list, and the area's neighbours),
// then reads all four back.
void link_both_ways(Chunk* from, Chunk* to) {
  from->next = to;
  from->next_in_area = to;
  to->prev = from;
  to->prev_in_area = from;
  EXPECT_EQ(from->next, to);
  EXPECT_EQ(from->next_in_area, to);
  EXPECT_EQ(to->prev, from);
  EXPECT_EQ(to->prev_in_area, from);
}

TEST(ChunkLink, NamesHeadersAcrossTheBookkeepingRange) {
  static_assert(sizeof(Chunk) <= 64);
  SlabAllocator slabs({.reserve_bytes = 4 * GiB, .return_at_once = true});
  ASSERT_TRUE(slabs.ok()) << ms_last_error_text();
  // Headers on the first and on far pages (4 KiB apart, then ~1 GiB): forward and backward links.
  Chunk* a = slabs.create<Chunk>();
  Chunk* b = slabs.create<Chunk>();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<void*> filler;
  for (int i = 0; i < 300; i++) filler.push_back(slabs.allocate(64));  // a few pages further on
  Chunk* c = slabs.create<Chunk>();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(a->next, nullptr);
  EXPECT_EQ(a->prev_in_area, nullptr);
  link_both_ways(a, c);  // forward, pages apart
  link_both_ways(b, a);  // backward, one object apart
  EXPECT_EQ(a->next->prev, a) << "through operator->";
  // Assigning one link to another copies its target: b->next now names c, though the two links
  // lie at different distances from c.
  b->next = a->next;
  EXPECT_EQ(b->next, c);
  c->next = b->next_in_area;  // b's area link names a
  EXPECT_EQ(c->next, a);
  a->next = nullptr;
  EXPECT_EQ(a->next, nullptr);
  EXPECT_EQ(b->next, c) << "b's link does not depend on a's";
  // A fresh header has no links (what the header pool relies on when it makes one in place).
  new (a) Chunk();
  EXPECT_EQ(a->next_in_area, nullptr);
  EXPECT_EQ(a->state, Chunk::State::kUnused);
  for (void* p : filler) slabs.free(p, 64);
  slabs.destroy(a);
  slabs.destroy(b);
  slabs.destroy(c);
}

// Headers at both ends of a 4 GiB range (a space's bookkeeping range is 4 GiB): the largest
// distances a space's links span, both ways, with 16-byte lines in between.
TEST(ChunkLink, ReachesAcrossTheWholeRange) {
  const size_t page = os::page_size();
  test::ReservedRange range(4 * GiB, page);
  char* low = range.base();
  char* high = range.base() + 4 * GiB - page;
  ASSERT_EQ(os::commit(low, page), MS_OK) << ms_last_error_text();
  ASSERT_EQ(os::commit(high, page), MS_OK) << ms_last_error_text();
  Chunk* a = new (low + 48) Chunk();                  // links on a line other than the header's
  Chunk* b = new (high + page - 64) Chunk();          // the range's last 64 bytes
  link_both_ways(a, b);
  link_both_ways(b, a);
}

}  // namespace
}  // namespace metaspace
