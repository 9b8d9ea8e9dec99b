// Free lists per level keep fully committed chunks in front, so one look finds a committed one.
#include "chunks/free_chunk_lists.hpp"

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include "common/units.hpp"

namespace metaspace {
namespace {

// Headers only: the lists never look at chunk memory. In place: a header's links are
// self-relative (ChunkLink), so headers are not copied.
void make(Chunk& c, int level, size_t bytes, size_t committed) {
  c.level = static_cast<uint8_t>(level);
  c.bytes = static_cast<uint32_t>(bytes);
  c.committed_bytes = static_cast<uint32_t>(committed);
}

TEST(FreeChunkLists, CommittedChunksComeFirst) {
  FreeChunkLists lists(13);
  Chunk none;
  make(none, 4, 256 * KiB, 0);
  Chunk part;
  make(part, 4, 256 * KiB, 64 * KiB);
  Chunk full1;
  make(full1, 4, 256 * KiB, 256 * KiB);
  Chunk full2;
  make(full2, 4, 256 * KiB, 256 * KiB);
  lists.add(&none);
  lists.add(&full1);
  lists.add(&part);
  lists.add(&full2);
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
  EXPECT_EQ(lists.count(4), 4u);
  EXPECT_EQ(lists.count(), 4u);
  EXPECT_EQ(lists.bytes(), MiB);
  EXPECT_TRUE(none.is_free());
  // Front: the fully committed ones (latest first), then the partly committed ones, then those
  // with nothing committed; purge looks no further than the last partly committed one.
  EXPECT_EQ(lists.first(4), &full2);
  EXPECT_EQ(full2.next, &full1);
  EXPECT_EQ(full1.next, &part);
  EXPECT_EQ(part.next, &none);
  EXPECT_EQ(lists.last_committed(4), &part);
  lists.remove(&part);
  EXPECT_EQ(lists.last_committed(4), &full1);
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
  lists.add(&part);
  EXPECT_EQ(lists.find_committed(4, 256 * KiB), &full2);
  EXPECT_EQ(lists.find_committed(3, 0), nullptr) << "empty level";
}

TEST(FreeChunkLists, UncommittedChunksStayBehindTheCommittedPart) {
  FreeChunkLists lists(13);
  Chunk a;
  make(a, 4, 256 * KiB, 0);
  Chunk b;
  make(b, 4, 256 * KiB, 0);
  lists.add(&a);
  lists.add(&b);
  EXPECT_EQ(lists.last_committed(4), nullptr) << "nothing for purge to visit";
  Chunk p1;
  make(p1, 4, 256 * KiB, 4 * KiB);
  Chunk p2;
  make(p2, 4, 256 * KiB, 8 * KiB);
  lists.add(&p1);
  lists.add(&p2);
  EXPECT_EQ(lists.first(4), &p1);
  EXPECT_EQ(p1.next, &p2);
  EXPECT_EQ(p2.next, &a);
  EXPECT_EQ(lists.last_committed(4), &p2);
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
  lists.remove(&p1);
  lists.remove(&p2);
  EXPECT_EQ(lists.last_committed(4), nullptr);
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
}

TEST(FreeChunkLists, PartlyCommittedHeadServesSmallerNeeds) {
  FreeChunkLists lists(13);
  Chunk part;
  make(part, 4, 256 * KiB, 64 * KiB);
  lists.add(&part);
  EXPECT_EQ(lists.find_committed(4, 64 * KiB), &part);
  EXPECT_EQ(lists.find_committed(4, 64 * KiB + 1), nullptr);
}

TEST(FreeChunkLists, RemoveFromAnyPosition) {
  FreeChunkLists lists(13);
  Chunk a, b, c, d;
  make(a, 2, MiB, MiB);
  make(b, 2, MiB, 0);
  make(c, 2, MiB, 0);
  make(d, 5, 128 * KiB, 0);
  lists.add(&a);
  lists.add(&b);
  lists.add(&c);
  lists.add(&d);
  lists.remove(&b);  // middle
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
  EXPECT_EQ(a.next, &c);
  EXPECT_EQ(c.prev, &a);
  lists.remove(&a);  // head
  lists.remove(&c);  // tail, now the only one
  EXPECT_EQ(lists.first(2), nullptr);
  EXPECT_EQ(lists.count(2), 0u);
  EXPECT_EQ(lists.count(), 1u);
  EXPECT_EQ(lists.bytes(), 128 * KiB);
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
}

TEST(FreeChunkLists, VerifyCatchesBrokenOrdering) {
  FreeChunkLists lists(13);
  Chunk full;
  make(full, 4, 256 * KiB, 256 * KiB);
  Chunk none;
  make(none, 4, 256 * KiB, 0);
  lists.add(&full);
  lists.add(&none);
  // Committed behind the list's back: committed memory in the part purge never looks at.
  none.committed_bytes = none.bytes;
  EXPECT_FALSE(lists.verify());
  EXPECT_EQ(ms_last_error(), MS_ERR_CORRUPTED);
  none.committed_bytes = 0;
  EXPECT_TRUE(lists.verify()) << ms_last_error_text();
  Chunk full2;
  make(full2, 4, 256 * KiB, 256 * KiB);
  lists.add(&full2);  // full2, full, none
  full2.committed_bytes = 64 * KiB;  // a fully committed chunk behind a partly committed one
  EXPECT_FALSE(lists.verify());
}

TEST(FreeChunkLists, VerifyCatchesAChunkOnTheWrongLevel) {
  FreeChunkLists lists(13);
  Chunk c;
  make(c, 4, 256 * KiB, 0);
  lists.add(&c);
  c.level = 5;
  EXPECT_FALSE(lists.verify());
}

}  // namespace
}  // namespace metaspace
