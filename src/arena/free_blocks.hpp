// An arena's blocks awaiting reuse: premature deallocations, salvaged chunk tails and class
// alignment gaps. Small sizes go to exact-size bins, larger ones to a balanced tree, and a
// request is served best fit over *all* sizes: the smallest block that holds it, wherever it is.
// (HotSpot lets small requests look only in the bins, so the 33–127-word gaps of 1 KiB class
// alignment are almost never reused.)
#pragma once

#include <cstddef>

#include "arena/bin_list.hpp"
#include "arena/block_tree.hpp"
#include "common/assert.hpp"

namespace metaspace {

// Where a free block came from: the report breaks waste down by it, and a split block's rest
// keeps its origin.
enum class BlockOrigin : unsigned { kDeallocated = 0, kSalvaged = 1, kAlignmentGap = 2 };
constexpr int kBlockOrigins = 3;

class FreeBlocks {
 public:
  // Blocks inside [foreign_lo, foreign_hi) are counted apart: a non-class arena receives class
  // space gaps, and the statistics must charge those bytes to the class space.
  void set_foreign_range(const char* lo, const char* hi) {
    foreign_lo_ = lo;
    foreign_hi_ = hi;
  }

  // bytes: a multiple of 8, at least 8.
  void add(void* p, size_t bytes, BlockOrigin origin = BlockOrigin::kDeallocated);
  // The smallest block of at least `bytes`, or null; its size goes to *got_bytes.
  void* take(size_t bytes, size_t* got_bytes, BlockOrigin* origin = nullptr);

  bool empty() const { return bins_.empty() && tree_.empty(); }
  size_t count() const { return bins_.count() + tree_.count(); }
  size_t bytes() const { return (bins_.words() + tree_.words()) * 8; }
  size_t foreign_bytes() const {
    return bytes_by_[0][1] + bytes_by_[1][1] + bytes_by_[2][1];
  }
  // Bytes of one origin, inside (foreign) or outside the foreign range.
  size_t bytes_of(BlockOrigin origin, bool in_foreign_range) const {
    return bytes_by_[static_cast<int>(origin)][in_foreign_range ? 1 : 0];
  }
  size_t largest_bytes() const {
    return (tree_.empty() ? bins_.largest_words() : tree_.largest_words()) * 8;
  }
  // Bytes filed plus bytes taken since the last reset. The arena folds its state into the space
  // counters when this (with what it bumped) reaches its slack, and resets it then, instead of
  // recomputing and comparing its whole contribution on every call (12 % of a free's 72 ns).
  size_t moved_bytes() const { return moved_bytes_; }
  void reset_moved_bytes() { moved_bytes_ = 0; }
  // The owner's note of the last retired chunk a freed block lay in (an opaque hint in front of
  // the chunk start table: frees cluster by age, and the table's probes were 10 % of a free).
  // Kept here because this structure exists only for arenas that free.
  const void* chunk_hint() const { return chunk_hint_; }
  void set_chunk_hint(const void* chunk) { chunk_hint_ = chunk; }
  // True if p lies in the foreign range (the other space).
  bool in_foreign_range(const void* p) const { return foreign(p); }

  // Both structures walked within `bounds` (see block_bounds.hpp), then the origin counters.
  bool verify(const BlockBounds& bounds = {}) const;
  // f(block, bytes, origin); only on free blocks that verify() accepted.
  template <typename F>
  void for_each(F f) const {
    auto visit = [&](void* p, size_t words, unsigned tag) {
      f(p, words * 8, static_cast<BlockOrigin>(tag));
    };
    bins_.for_each(visit);
    tree_.for_each(visit);
  }

 private:
  bool foreign(const void* p) const { return p >= foreign_lo_ && p < foreign_hi_; }

  BinList bins_;
  BlockTree tree_;
  const char* foreign_lo_ = nullptr;
  const char* foreign_hi_ = nullptr;
  size_t bytes_by_[kBlockOrigins][2] = {};  // [origin][in foreign range]
  size_t moved_bytes_ = 0;
  const void* chunk_hint_ = nullptr;
};

// Inline: they are most of a free's and a reuse's work (the calls cost ~1 ns each).
inline void FreeBlocks::add(void* p, size_t bytes, BlockOrigin origin) {
  MS_ASSERT(bytes >= 8 && bytes % 8 == 0, "free block %p of %zu bytes", p, bytes);
  size_t words = bytes / 8;
  unsigned tag = static_cast<unsigned>(origin);
  if (words <= BinList::kMaxWords) {
    bins_.add(p, words, tag);
  } else {
    tree_.add(p, words, tag);
  }
  bytes_by_[tag][foreign(p) ? 1 : 0] += bytes;
  moved_bytes_ += bytes;
}

inline void* FreeBlocks::take(size_t bytes, size_t* got_bytes, BlockOrigin* origin) {
  size_t words = bytes / 8;
  size_t got_words = 0;
  unsigned tag = 0;
  void* p = nullptr;
  if (words <= BinList::kMaxWords) p = bins_.take(words, &got_words, &tag);
  // Every tree block is larger than every bin block, so the bins' answer, if any, is the best.
  if (p == nullptr) p = tree_.take(words, &got_words, &tag);
  if (p == nullptr) return nullptr;
  *got_bytes = got_words * 8;
  bytes_by_[tag][foreign(p) ? 1 : 0] -= *got_bytes;
  moved_bytes_ += *got_bytes;
  if (origin != nullptr) *origin = static_cast<BlockOrigin>(tag);
  return p;
}

}  // namespace metaspace
