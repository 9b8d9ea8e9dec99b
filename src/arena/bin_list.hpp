// Free blocks of the 32 smallest sizes (1..32 words), one LIFO list per exact size, with a bitmap
// of non-empty bins: insert and "smallest non-empty bin ≥ n" are O(1). A block stores only the
// link to the next one, so even a one-word block can be kept; the link's low bits (blocks are
// 8-byte aligned) carry a small tag the owner gives each block (FreeBlocks: where it came from).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "arena/block_bounds.hpp"
#include "common/assert.hpp"

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

// Inline: a free and a reuse are each one of these plus a few loads (the call cost ~1 ns).
inline void BinList::add(void* p, size_t words, unsigned tag) {
  MS_ASSERT(words >= 1 && words <= kMaxWords, "block %p of %zu words does not fit a bin", p, words);
  MS_ASSERT(tag <= kMaxTag, "tag %u", tag);
  size_t i = words - 1;
  Block* b = static_cast<Block*>(p);
  b->link = reinterpret_cast<uintptr_t>(bins_[i]) | tag;
  bins_[i] = b;
  mask_ |= uint32_t{1} << i;
  count_++;
  words_ += words;
}

inline void* BinList::take(size_t words, size_t* got_words, unsigned* tag) {
  uint32_t candidates = mask_ & (~uint32_t{0} << (words - 1));
  if (candidates == 0) return nullptr;
  size_t i = static_cast<size_t>(std::countr_zero(candidates));
  Block* b = bins_[i];
  bins_[i] = b->next();
  if (tag != nullptr) *tag = b->tag();
  if (bins_[i] == nullptr) mask_ &= ~(uint32_t{1} << i);
  count_--;
  words_ -= i + 1;
  *got_words = i + 1;
  return b;
}

}  // namespace metaspace
