// An arena's blocks awaiting reuse: premature deallocations, salvaged chunk tails and class
// alignment gaps. Small sizes go to exact-size bins, larger ones to a balanced tree, and a
// request is served best fit over *all* sizes: the smallest block that holds it, wherever it is.
// (HotSpot lets small requests look only in the bins, so the 33–127-word gaps of 1 KiB class
// alignment are almost never reused.)
#pragma once

#include <cstddef>

#include "arena/bin_list.hpp"
#include "arena/block_tree.hpp"

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
  size_t largest_bytes() const;
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
};

}  // namespace metaspace
