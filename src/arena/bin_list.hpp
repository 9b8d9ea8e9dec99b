// Free blocks of the 32 smallest sizes (1..32 words), one LIFO list per exact size, with a bitmap
// of non-empty bins: insert and "smallest non-empty bin ≥ n" are O(1). A block stores only the
// link to the next one, so even a one-word block can be kept; the link's low bits (blocks are
// 8-byte aligned) carry a small tag the owner gives each block (FreeBlocks: where it came from).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "arena/block_bounds.hpp"

namespace metaspace {

class BinList {
 public:
  static constexpr size_t kBins = 32;
  static constexpr size_t kMaxWords = kBins;

  static constexpr unsigned kMaxTag = 7;

  void add(void* p, size_t words, unsigned tag = 0);
  // The smallest block of at least `words` words, or null; its size goes to *got_words.
  void* take(size_t words, size_t* got_words, unsigned* tag = nullptr);

  bool empty() const { return mask_ == 0; }
  size_t count() const { return count_; }
  size_t words() const { return words_; }
  size_t largest_words() const { return mask_ == 0 ? 0 : 32 - std::countl_zero(mask_); }

  // Walks every bin, reading a block only if `bounds` accepts it and at most count() blocks in
  // all: a smashed link or a cycle (double free) is reported as MS_ERR_CORRUPTED.
  bool verify(const BlockBounds& bounds = {}) const;
  // Visits every block (for statistics that classify blocks by address). Only on lists that
  // verify() accepted: it trusts the links.
  template <typename F>
  void for_each(F f) const {
    for (size_t i = 0; i < kBins; i++) {
      for (Block* b = bins_[i]; b != nullptr; b = b->next()) {
        f(static_cast<void*>(b), i + 1, b->tag());
      }
    }
  }

 private:
  struct Block {
    uintptr_t link;  // next block | tag
    Block* next() const { return reinterpret_cast<Block*>(link & ~uintptr_t{kMaxTag}); }
    unsigned tag() const { return static_cast<unsigned>(link & kMaxTag); }
  };
  Block* bins_[kBins] = {};
  uint32_t mask_ = 0;  // bit i: bin of size i + 1 words is non-empty
  size_t count_ = 0;
  size_t words_ = 0;
};

}  // namespace metaspace
