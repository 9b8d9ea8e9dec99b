// O(1) address → chunk for every chunk: blocks in the first and the last chunk of the first and
// the last node (and of the class space) are found, freed by their loader and refused to any
// other. A lookup that works everywhere but at a node's edge would turn back into a scan (or a
// wrong answer) exactly there.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <map>
#include <vector>

#include "instance/metaspace.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {
namespace {

struct Block {
  ms_loader_t* loader;
  char* p;
};

class ChunkLookupTest : public ::testing::Test {
 protected:
  static constexpr size_t kRoot = 64 * KiB;

  void SetUp() override {
    ms_settings_t s;
    ms_settings_init(&s);
    s.root_chunk_bytes = kRoot;
    s.node_bytes = 4 * kRoot;         // small nodes: the space needs several
    s.class_space_bytes = 4 * kRoot;  // small class space: filled completely
    s.commit_granule_bytes = 4 * KiB;
    s.class_alignment_bytes = 8;
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
  }
  void TearDown() override { ms_destroy(ms_); }

  Metaspace& impl() { return *reinterpret_cast<Metaspace*>(ms_); }

  // Micro loaders (1 KiB chunks) with one 1 000-byte block each in `space`, until the space has
  // `nodes` nodes, or is full (class space).
  void fill(ms_space_t space, size_t nodes) {
    VirtualSpaceList& vs = impl().context(space).vslist();
    for (;;) {
      ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
      ASSERT_NE(l, nullptr);
      loaders_.push_back(l);
      // 1 KiB: micro loaders' blocks fill the shared 4 KiB chunks to their last byte.
      void* p = ms_allocate(l, space, 1024);
      if (p == nullptr) {
        ASSERT_EQ(ms_last_error(), MS_ERR_CLASS_SPACE_FULL) << ms_last_error_text();
        return;
      }
      blocks_.push_back({l, static_cast<char*>(p)});
      if (vs.nodes().size() > nodes) return;
    }
  }

  // The block lowest and highest in `node`.
  std::pair<Block, Block> edges(const VirtualSpaceNode& node) {
    Block lo{nullptr, nullptr}, hi{nullptr, nullptr};
    for (const Block& b : blocks_) {
      if (!node.contains(b.p)) continue;
      if (lo.p == nullptr || b.p < lo.p) lo = b;
      if (hi.p == nullptr || b.p > hi.p) hi = b;
    }
    return {lo, hi};
  }

  // The block's chunk is found from the block's first and last byte; only its loader may free it.
  void expect_found_and_owned(const Block& b, const char* where) {
    SCOPED_TRACE(where);
    ASSERT_NE(b.p, nullptr);
    Context& ctx = impl().context(ms_is_class_space(ms_, b.p) ? MS_SPACE_CLASS : MS_SPACE_NONCLASS);
    Chunk* c = ctx.chunks().chunk_containing(b.p);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->contains(b.p));
    EXPECT_EQ(ctx.chunks().chunk_containing(b.p + 999), c);
    EXPECT_EQ(ctx.chunks().chunk_containing(c->end() - 1), c);
    ms_loader_t* other = b.loader == loaders_.front() ? loaders_.back() : loaders_.front();
    EXPECT_EQ(ms_deallocate(other, b.p, 1000), MS_ERR_NOT_OWNED);
    EXPECT_EQ(ms_deallocate(b.loader, b.p, 1000), MS_OK) << ms_last_error_text();
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }

  ms_metaspace_t* ms_ = nullptr;
  std::vector<ms_loader_t*> loaders_;
  std::vector<Block> blocks_;
};

TEST_F(ChunkLookupTest, FirstAndLastChunkOfFirstAndLastNonClassNode) {
  fill(MS_SPACE_NONCLASS, 3);
  const auto& nodes = impl().context(MS_SPACE_NONCLASS).vslist().nodes();
  ASSERT_GE(nodes.size(), 3u);
  // The last node is only begun; its neighbour before it is full to the last chunk.
  const VirtualSpaceNode& first = *nodes.front();
  const VirtualSpaceNode& full_last = *nodes[nodes.size() - 2];
  auto [first_lo, first_hi] = edges(first);
  auto [last_lo, last_hi] = edges(full_last);
  auto [newest, newest_hi] = edges(*nodes.back());
  EXPECT_LT(first_lo.p, first.base() + 1 * KiB);
  EXPECT_GE(first_hi.p, first.end() - 1 * KiB);
  EXPECT_GE(last_hi.p, full_last.end() - 1 * KiB);
  expect_found_and_owned(first_lo, "first chunk of the first node");
  expect_found_and_owned(first_hi, "last chunk of the first node");
  expect_found_and_owned(last_lo, "first chunk of a later node");
  expect_found_and_owned(last_hi, "last chunk of a later node");
  expect_found_and_owned(newest, "first chunk of the newest node");
}

TEST_F(ChunkLookupTest, FirstAndLastChunkOfTheClassSpace) {
  fill(MS_SPACE_CLASS, 1);
  const VirtualSpaceNode& node = *impl().context(MS_SPACE_CLASS).vslist().nodes().front();
  auto [lo, hi] = edges(node);
  // The first granule is the null guard; the first class chunk follows it.
  EXPECT_LT(lo.p, node.base() + 8 * KiB);
  EXPECT_GE(hi.p, node.end() - 1 * KiB);
  expect_found_and_owned(lo, "first class chunk");
  expect_found_and_owned(hi, "last class chunk");
}

TEST_F(ChunkLookupTest, AddressesOutsideEveryNodeAndInFreeChunksAreNotOwned) {
  fill(MS_SPACE_NONCLASS, 1);
  ms_loader_t* l = loaders_.front();
  char local = 0;
  EXPECT_EQ(ms_deallocate(l, &local, 8), MS_ERR_NOT_OWNED);
  EXPECT_EQ(impl().context(MS_SPACE_NONCLASS).chunks().chunk_containing(&local), nullptr);
  // A block of a loader that died lies in a free chunk now: nobody owns it.
  Block dead = blocks_.back();
  ASSERT_EQ(ms_loader_destroy(dead.loader), MS_OK);
  for (ms_loader_t* other : {loaders_.front(), loaders_[1]}) {
    if (other != dead.loader) EXPECT_EQ(ms_deallocate(other, dead.p, 1000), MS_ERR_NOT_OWNED);
  }
  loaders_.pop_back();
  // A standard loader's chunk comes back free when it dies: no start is recorded for it, and a
  // lookup anywhere in it finds no chunk (not the in-use chunk whose start lies nearest below).
  ms_loader_t* standard = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(standard, nullptr);
  char* p = static_cast<char*>(ms_allocate(standard, MS_SPACE_NONCLASS, 3000));
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  ChunkManager& chunks = impl().context(MS_SPACE_NONCLASS).chunks();
  Chunk* c = chunks.chunk_containing(p);
  ASSERT_NE(c, nullptr);
  char* base = c->base;
  char* last = c->end() - 1;
  VirtualSpaceNode* node = chunks.vslist().node_containing(base);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->chunk_starts().at(base), c);
  ASSERT_EQ(ms_loader_destroy(standard), MS_OK);
  EXPECT_EQ(node->chunk_starts().at(base), nullptr) << "a free chunk records no start";
  for (const char* q : {base, p, last}) EXPECT_EQ(chunks.chunk_containing(q), nullptr);
  EXPECT_EQ(ms_deallocate(loaders_.front(), p, 8), MS_ERR_NOT_OWNED);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

// Splits, merges and enlargements keep the table exact: after a random life of a space, every
// chunk is found from its first and last byte (ChunkManager::verify checks exactly that).
TEST_F(ChunkLookupTest, TableFollowsSplitMergeAndEnlarge) {
  std::vector<ms_loader_t*> live;
  unsigned seed = 11;
  for (int step = 0; step < 3000; step++) {
    seed = seed * 1103515245u + 12345u;
    unsigned r = (seed >> 16) % 10;
    if (r < 6 || live.empty()) {
      ms_loader_t* l = ms_loader_create(ms_, r < 2 ? MS_LOADER_STANDARD : MS_LOADER_MICRO, 0);
      ASSERT_NE(l, nullptr);
      for (unsigned k = 0; k < 1 + r * 3; k++) {
        if (ms_allocate(l, MS_SPACE_NONCLASS, 64 + 200 * k) == nullptr) break;
      }
      live.push_back(l);
    } else {
      size_t i = (seed >> 8) % live.size();
      ASSERT_EQ(ms_loader_destroy(live[i]), MS_OK);
      live.erase(live.begin() + static_cast<long>(i));
    }
    if (step % 500 == 0) ms_purge(ms_);
    if (step % 100 == 0) ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }
  for (ms_loader_t* l : live) ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  ms_purge(ms_);
  ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

}  // namespace
}  // namespace metaspace
