// Free blocks of 33..128 words, one LIFO list per exact size, with a 96-bit map of non-empty
// bins: insert and "smallest non-empty bin ≥ n" are O(1). Above the small bins (bin_list.hpp),
// below the size tree (block_tree.hpp): in the size mix of docs/workload-model.md 11 % of the
// non-class blocks are 33..130 words, and filing one in the AVL tree that lives in the blocks
// costs a cache miss per level, where a bin takes a push. 1.5 KiB, made only when an
// arena first frees a block of these sizes (FreeBlocks::attach_medium).
//
// The storage is the public struct ms__medium_bins (metaspace/detail/loader_head.h): a non-class arena's small bins
// point to it, and the inline ms_deallocate and reuse of a loader that is not shared push and pop
// its blocks of tag 0 as they do the small bins' (same rules: bin_list.hpp).
#pragma once

#include <metaspace/detail/loader_head.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "arena/bin_list.hpp"
#include "arena/block_bounds.hpp"
#include "common/assert.hpp"

namespace metaspace {

class MediumBins {
 public:
  static constexpr size_t kMinWords = 33;
  static constexpr size_t kMaxWords = 128;
  static constexpr size_t kBins = kMaxWords - kMinWords + 1;
  static constexpr unsigned kMaxTag = exact_bins::kTagMask;
  static_assert(kBins == sizeof(ms__medium_bins::bin) / sizeof(ms__free_bin));

  static bool fits(size_t words) { return words >= kMinWords && words <= kMaxWords; }

  void add(void* p, size_t words, unsigned tag) {
    MS_ASSERT(fits(words) && tag <= kMaxTag, "block %p of %zu words, tag %u", p, words, tag);
    size_t i = words - kMinWords;
    *static_cast<uintptr_t*>(p) = bins_.bin[i].first | tag;
    bins_.bin[i].first = reinterpret_cast<uintptr_t>(p);
    bins_.mask[i / 64] |= uint64_t{1} << (i % 64);
    set_count(i, bins_.bin[i].count + 1);
  }

  // The bin take() would pop from, or null; its block size goes to *bin_words. Reads no block.
  const ms__free_bin* bin_for(size_t words, size_t* bin_words) const {
    size_t i = index_for(words);
    if (i == kBins) return nullptr;
    *bin_words = i + kMinWords;
    return &bins_.bin[i];
  }

  // The smallest block of at least `words` (≤ kMaxWords), or null.
  void* take(size_t words, size_t* got_words, unsigned* tag) {
    size_t i = index_for(words);
    if (i == kBins) return nullptr;
    uintptr_t b = bins_.bin[i].first;
    uintptr_t l = link(b);
    bins_.bin[i].first = l & ~uintptr_t{kMaxTag};
    if (bins_.bin[i].first == 0) bins_.mask[i / 64] &= ~(uint64_t{1} << (i % 64));
    *tag = static_cast<unsigned>(l & kMaxTag);
    set_count(i, bins_.bin[i].count - 1);
    *got_words = i + kMinWords;
    return reinterpret_cast<void*>(b);
  }

  // Owner only (the map is the inline paths').
  bool empty() const { return (bins_.mask[0] | bins_.mask[1]) == 0; }
  size_t largest_words() const {
    if (bins_.mask[1] != 0) return 64 + 63 - static_cast<size_t>(std::countl_zero(bins_.mask[1])) + kMinWords;
    if (bins_.mask[0] != 0) return 63 - static_cast<size_t>(std::countl_zero(bins_.mask[0])) + kMinWords;
    return 0;
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
  void sum(size_t* blocks, size_t* words) const {
    exact_bins::sum(bins_.bin, kBins, kMinWords, blocks, words);
  }

  ms__medium_bins& shared_state() { return bins_; }
  // The MediumBins whose shared_state() `state` is (null for null).
  static MediumBins* of(ms__medium_bins* state) { return reinterpret_cast<MediumBins*>(state); }

  // As BinList::verify: bounded walks, cycles and smashed links are MS_ERR_CORRUPTED. The caller
  // excludes the inline paths.
  bool verify(const BlockBounds& bounds = {}) const;
  template <typename F>
  void for_each(F f) const {
    exact_bins::for_each(bins_.bin, kBins, kMinWords, f);
  }

 private:
  // The smallest non-empty bin of at least `words`, or kBins.
  size_t index_for(size_t words) const {
    size_t from = words < kMinWords ? 0 : words - kMinWords;
    for (size_t w = from / 64; w < 2; w++) {
      uint64_t m = bins_.mask[w] & (w == from / 64 ? ~uint64_t{0} << (from % 64) : ~uint64_t{0});
      if (m != 0) return w * 64 + static_cast<size_t>(std::countr_zero(m));
    }
    return kBins;
  }
  static uintptr_t link(uintptr_t b) { return exact_bins::link(b); }
  void set_count(size_t i, size_t n) { exact_bins::set_count(bins_.bin[i], n); }

  ms__medium_bins bins_ = {};
};
// MediumBins::of turns the public struct back into its wrapper.
static_assert(std::is_standard_layout_v<MediumBins> && sizeof(MediumBins) == sizeof(ms__medium_bins));

}  // namespace metaspace
