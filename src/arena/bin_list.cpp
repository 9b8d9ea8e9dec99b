#include "arena/bin_list.hpp"

#include <bit>

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

namespace exact_bins {

bool verify(const ms__free_bin* bins, size_t n, size_t first_words, const uint64_t* mask,
            const char* name, const BlockBounds& bounds) {
  size_t seen = 0;
  for (size_t i = 0; i < n; i++) {
    const size_t words = i + first_words;
    MS_VERIFY(((mask[i / 64] >> (i % 64)) & 1) == (bins[i].first != 0 ? 1u : 0u),
              "%s %zu mask bit wrong", name, words);
    // `slow` follows at half speed over blocks already checked: it meets `b` iff there is a
    // cycle (a block freed twice links to itself).
    uintptr_t slow = bins[i].first;
    size_t steps = 0;
    size_t in_bin = 0;
    for (uintptr_t b = bins[i].first; b != 0; b = next(b)) {
      MS_VERIFY(steps == 0 || b != slow, "%s %zu is a cycle through %p: a block freed twice?",
                name, words, reinterpret_cast<void*>(b));
      MS_VERIFY(seen < bounds.max_blocks, "%s %zu: more blocks than the arena could hold", name,
                words);
      MS_VERIFY(b % 8 == 0 && bounds(reinterpret_cast<void*>(b), words * 8),
                "%s %zu links to %p (%zu bytes), which is not free memory of this arena: "
                "a freed block was overwritten", name, words, reinterpret_cast<void*>(b),
                words * 8);
      seen++;
      in_bin++;
      if (++steps % 2 == 0) slow = next(slow);
    }
    MS_VERIFY(in_bin == count_of(bins[i]), "%s %zu holds %zu blocks, its counter says %zu", name,
              words, in_bin, count_of(bins[i]));
  }
  return true;
}

}  // namespace exact_bins

bool BinList::verify(const BlockBounds& bounds) const {
  return exact_bins::verify(bins_.bin, kBins, 1, &bins_.mask, "bin", bounds);
}

}  // namespace metaspace
