// Free blocks of the 32 smallest sizes (1..32 words), one LIFO list per exact size, with a bitmap
// of non-empty bins: insert and "smallest non-empty bin ≥ n" are O(1). A block stores only the
// link to the next one, so even a one-word block can be kept; the link's low bits (blocks are
// 8-byte aligned) carry a small tag the owner gives each block (FreeBlocks: where it came from).
//
// The heads, counts and bitmap are the public struct ms__free_bins (metaspace/detail/loader_head.h): for a loader
// that is not shared the inline ms_deallocate and ms_allocate push and pop blocks of tag 0
// themselves, without a call or a lock. So
//   - the per-bin counts are the only size figures (total blocks and words are summed from them),
//     written with atomic stores and read with atomic loads: statistics read them from other
//     threads while the owner works;
//   - the lists themselves (heads, links, bitmap) are read from another thread only by verify(),
//     which first excludes the owner's inline paths (owner_exclusion.hpp).
#pragma once

#include <metaspace/detail/loader_head.h>

#include <bit>
#include <cstddef>
#include <cstdint>

#include "arena/block_bounds.hpp"
#include "common/assert.hpp"

namespace metaspace {

// What BinList and MediumBins (medium_bins.hpp) share: arrays of public ms__free_bin, whose
// counts are read by statistics from other threads.
namespace exact_bins {
inline size_t count_of(const ms__free_bin& b) { return __atomic_load_n(&b.count, __ATOMIC_RELAXED); }
inline void set_count(ms__free_bin& b, size_t n) { __atomic_store_n(&b.count, n, __ATOMIC_RELAXED); }
inline uintptr_t link(uintptr_t block) { return *reinterpret_cast<const uintptr_t*>(block); }
// Blocks are 8-byte aligned: a link's low 3 bits carry the block's tag.
constexpr unsigned kTagMask = 7;
inline uintptr_t next(uintptr_t block) { return link(block) & ~uintptr_t{kTagMask}; }
// Blocks and words of `n` bins whose first holds blocks of `first_words` words, in one pass.
// Walking down, `run` is the number of blocks in bins i..n-1, and adding it once per bin counts
// every block of bin i (i + 1) times: two adds per bin and no multiply. The arena sums all 128
// bins at every fold of its counters (every 64 KiB a loader frees or reuses), where a multiply
// and an add per bin would cost ~410 instructions.
inline void sum(const ms__free_bin* bins, size_t n, size_t first_words, size_t* blocks,
                size_t* words) {
  MS_ASSERT(first_words >= 1, "bins start at %zu words", first_words);
  size_t run = 0, weighted = 0;
#pragma GCC unroll 8
  for (size_t i = n; i-- > 0;) {
    run += count_of(bins[i]);
    weighted += run;
  }
  *blocks += run;
  *words += weighted + run * (first_words - 1);
}
// Checked mode, before a take from `bin` (blocks of `words` words): its first block and that
// block's link lie where `bounds` allows, and the link agrees with the bin's count (a last block
// links to nothing, any other to a block). A write into a freed block's first word fails this,
// so the take that follows never chases a smashed link (docs/guarantees.md).
inline bool head_sound(const ms__free_bin& bin, size_t words, const BlockBounds& bounds) {
  uintptr_t b = bin.first;
  size_t n = count_of(bin);
  if (b == 0 || b % 8 != 0 || n == 0 || !bounds(reinterpret_cast<void*>(b), words * 8)) {
    return false;
  }
  uintptr_t after = next(b);
  if (after == 0) return n == 1;
  return n > 1 && bounds(reinterpret_cast<void*>(after), words * 8);
}
// Visits every block of `n` bins as f(block, words, tag). Only on bins verify() accepted.
template <typename F>
void for_each(const ms__free_bin* bins, size_t n, size_t first_words, F f) {
  for (size_t i = 0; i < n; i++) {
    for (uintptr_t b = bins[i].first; b != 0; b = next(b)) {
      f(reinterpret_cast<void*>(b), i + first_words, static_cast<unsigned>(link(b) & kTagMask));
    }
  }
}
// Walks `n` bins (bit i of `mask`, 64 per word: bin i is non-empty), reading a block only if
// `bounds` accepts it and at most bounds.max_blocks blocks in all: a wrong mask bit, a cycle
// (a block freed twice), a link out of the arena or a count that disagrees is MS_ERR_CORRUPTED,
// the message naming the bin as "<name> <words>".
bool verify(const ms__free_bin* bins, size_t n, size_t first_words, const uint64_t* mask,
            const char* name, const BlockBounds& bounds);
}  // namespace exact_bins

class BinList {
 public:
  static constexpr size_t kBins = 32;
  static constexpr size_t kMaxWords = kBins;

  static constexpr unsigned kMaxTag = exact_bins::kTagMask;

  void add(void* p, size_t words, unsigned tag = 0);
  // The smallest block of at least `words` words, or null; its size goes to *got_words.
  void* take(size_t words, size_t* got_words, unsigned* tag = nullptr);
  // The bin take() would pop from, or null; its block size goes to *bin_words. Reads no block.
  const ms__free_bin* bin_for(size_t words, size_t* bin_words) const {
    size_t i = index_for(words);
    if (i == kBins) return nullptr;
    *bin_words = i + 1;
    return &bins_.bin[i];
  }

  // Owner only (the bitmap is the inline paths').
  bool empty() const { return bins_.mask == 0; }
  size_t largest_words() const {
    return bins_.mask == 0 ? 0 : static_cast<size_t>(64 - std::countl_zero(bins_.mask));
  }
  // Any thread.
  size_t count() const {
    size_t n = 0, w = 0;
    sum(&n, &w);
    return n;
  }
  size_t words() const {
    size_t n = 0, w = 0;
    sum(&n, &w);
    return w;
  }
  // Both in one pass (statistics fold them often).
  void sum(size_t* blocks, size_t* words) const {
    exact_bins::sum(bins_.bin, kBins, 1, blocks, words);
  }

  // What the inline paths work on (the arena publishes it in the loader's head).
  ms__free_bins& shared_state() { return bins_; }
  const ms__free_bins& shared_state() const { return bins_; }

  // Walks every bin, reading a block only if `bounds` accepts it and at most count() blocks in
  // all: a smashed link or a cycle (double free) is reported as MS_ERR_CORRUPTED. The caller
  // excludes the inline paths.
  bool verify(const BlockBounds& bounds = {}) const;
  // Visits every block (for statistics that classify blocks by address). Only on lists that
  // verify() accepted: it trusts the links.
  template <typename F>
  void for_each(F f) const {
    exact_bins::for_each(bins_.bin, kBins, 1, f);
  }

 private:
  // The smallest non-empty bin of at least `words`, or kBins.
  size_t index_for(size_t words) const {
    uint64_t candidates = bins_.mask & (~uint64_t{0} << (words - 1));
    return candidates == 0 ? kBins : static_cast<size_t>(std::countr_zero(candidates));
  }
  static uintptr_t link(uintptr_t block) { return exact_bins::link(block); }
  void set_count(size_t i, size_t n) { exact_bins::set_count(bins_.bin[i], n); }

  ms__free_bins bins_ = {};
};

// Inline: a free and a reuse are each one of these plus a few loads, so a call would be a
// sizeable part of them.
inline void BinList::add(void* p, size_t words, unsigned tag) {
  MS_ASSERT(words >= 1 && words <= kMaxWords, "block %p of %zu words does not fit a bin", p, words);
  MS_ASSERT(tag <= kMaxTag, "tag %u", tag);
  size_t i = words - 1;
  *static_cast<uintptr_t*>(p) = bins_.bin[i].first | tag;
  bins_.bin[i].first = reinterpret_cast<uintptr_t>(p);
  bins_.mask |= uint64_t{1} << i;
  set_count(i, bins_.bin[i].count + 1);
}

inline void* BinList::take(size_t words, size_t* got_words, unsigned* tag) {
  size_t i = index_for(words);
  if (i == kBins) return nullptr;
  uintptr_t b = bins_.bin[i].first;
  uintptr_t l = link(b);
  bins_.bin[i].first = l & ~uintptr_t{kMaxTag};
  if (tag != nullptr) *tag = static_cast<unsigned>(l & kMaxTag);
  if (bins_.bin[i].first == 0) bins_.mask &= ~(uint64_t{1} << i);
  set_count(i, bins_.bin[i].count - 1);
  *got_words = i + 1;
  return reinterpret_cast<void*>(b);
}

}  // namespace metaspace
