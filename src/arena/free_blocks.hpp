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

class FreeBlocks {
 public:
  // Blocks inside [foreign_lo, foreign_hi) are counted apart: a non-class arena receives class
  // space gaps, and the statistics must charge those bytes to the class space.
  void set_foreign_range(const char* lo, const char* hi) {
    foreign_lo_ = lo;
    foreign_hi_ = hi;
  }

  // bytes: a multiple of 8, at least 8.
  void add(void* p, size_t bytes);
  // The smallest block of at least `bytes`, or null; its size goes to *got_bytes.
  void* take(size_t bytes, size_t* got_bytes);

  bool empty() const { return bins_.empty() && tree_.empty(); }
  size_t count() const { return bins_.count() + tree_.count(); }
  size_t bytes() const { return (bins_.words() + tree_.words()) * 8; }
  size_t foreign_bytes() const { return foreign_bytes_; }
  size_t largest_bytes() const;

  bool verify() const;
  template <typename F>
  void for_each(F f) const {
    bins_.for_each([&](void* p, size_t words) { f(p, words * 8); });
    tree_.for_each([&](void* p, size_t words) { f(p, words * 8); });
  }

 private:
  bool foreign(const void* p) const { return p >= foreign_lo_ && p < foreign_hi_; }

  BinList bins_;
  BlockTree tree_;
  const char* foreign_lo_ = nullptr;
  const char* foreign_hi_ = nullptr;
  size_t foreign_bytes_ = 0;
};

}  // namespace metaspace
