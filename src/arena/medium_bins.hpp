// Free blocks of 33..128 words, one LIFO list per exact size, with a 96-bit map of non-empty
// bins: insert and "smallest non-empty bin ≥ n" are O(1). Above the exact-size bins of the loader
// head (bin_list.hpp), below the size tree (block_tree.hpp): in the size mix of
// docs/workload-model.md 11 % of the non-class blocks are 33..130 words, and filing one in the
// AVL tree that lives in the blocks took ~100 ns (a cache miss per level), where a bin takes a
// push. 1.5 KiB, made only when an arena first frees a block of these sizes (FreeBlocks).
// A block stores the link to the next one; the link's low 3 bits carry the block's tag.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "arena/block_bounds.hpp"
#include "common/assert.hpp"

namespace metaspace {

class MediumBins {
 public:
  static constexpr size_t kMinWords = 33;
  static constexpr size_t kMaxWords = 128;
  static constexpr size_t kBins = kMaxWords - kMinWords + 1;
  static constexpr unsigned kMaxTag = 7;

  static bool fits(size_t words) { return words >= kMinWords && words <= kMaxWords; }

  void add(void* p, size_t words, unsigned tag) {
    MS_ASSERT(fits(words) && tag <= kMaxTag, "block %p of %zu words, tag %u", p, words, tag);
    size_t i = words - kMinWords;
    *static_cast<uintptr_t*>(p) = first_[i] | tag;
    first_[i] = reinterpret_cast<uintptr_t>(p);
    mask_[i / 64] |= uint64_t{1} << (i % 64);
    count_[i]++;
    count_all_++;
    words_ += words;
  }

  // The smallest block of at least `words` (≤ kMaxWords), or null.
  void* take(size_t words, size_t* got_words, unsigned* tag) {
    size_t from = words < kMinWords ? 0 : words - kMinWords;
    size_t i = kBins;
    for (size_t w = from / 64; w < 2 && i == kBins; w++) {
      uint64_t m = mask_[w] & (w == from / 64 ? ~uint64_t{0} << (from % 64) : ~uint64_t{0});
      if (m != 0) i = w * 64 + static_cast<size_t>(std::countr_zero(m));
    }
    if (i == kBins) return nullptr;
    uintptr_t b = first_[i];
    uintptr_t l = *reinterpret_cast<const uintptr_t*>(b);
    first_[i] = l & ~uintptr_t{kMaxTag};
    if (first_[i] == 0) mask_[i / 64] &= ~(uint64_t{1} << (i % 64));
    *tag = static_cast<unsigned>(l & kMaxTag);
    count_[i]--;
    count_all_--;
    *got_words = i + kMinWords;
    words_ -= *got_words;
    return reinterpret_cast<void*>(b);
  }

  bool empty() const { return (mask_[0] | mask_[1]) == 0; }
  size_t count() const { return count_all_; }
  size_t words() const { return words_; }
  size_t largest_words() const {
    if (mask_[1] != 0) return 64 + 63 - std::countl_zero(mask_[1]) + kMinWords;
    if (mask_[0] != 0) return 63 - std::countl_zero(mask_[0]) + kMinWords;
    return 0;
  }

  // As BinList::verify: bounded walks, cycles and smashed links are MS_ERR_CORRUPTED.
  bool verify(const BlockBounds& bounds) const;
  template <typename F>
  void for_each(F f) const {
    for (size_t i = 0; i < kBins; i++) {
      for (uintptr_t b = first_[i]; b != 0; b = link(b) & ~uintptr_t{kMaxTag}) {
        f(reinterpret_cast<void*>(b), i + kMinWords, static_cast<unsigned>(link(b) & kMaxTag));
      }
    }
  }

 private:
  static uintptr_t link(uintptr_t b) { return *reinterpret_cast<const uintptr_t*>(b); }

  uintptr_t first_[kBins] = {};
  size_t count_[kBins] = {};
  uint64_t mask_[2] = {};  // bit i: bin of i + kMinWords words is not empty
  size_t count_all_ = 0;
  size_t words_ = 0;
};

}  // namespace metaspace
