#include "arena/bin_list.hpp"

#include <bit>

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

bool BinList::verify(const BlockBounds& bounds) const {
  size_t n = 0;
  for (size_t i = 0; i < kBins; i++) {
    MS_VERIFY(((bins_.mask >> i) & 1) == (bins_.bin[i].first != 0 ? 1u : 0u),
              "bin %zu mask bit wrong", i + 1);
    size_t bytes = (i + 1) * 8;
    // `slow` follows at half speed over blocks already checked: it meets `b` iff there is a
    // cycle (a block freed twice links to itself).
    uintptr_t slow = bins_.bin[i].first;
    size_t steps = 0;
    size_t in_bin = 0;
    for (uintptr_t b = bins_.bin[i].first; b != 0; b = link(b) & ~uintptr_t{kMaxTag}) {
      MS_VERIFY(steps == 0 || b != slow, "bin %zu is a cycle through %p: a block freed twice?",
                i + 1, reinterpret_cast<void*>(b));
      MS_VERIFY(n < bounds.max_blocks, "bin %zu: more blocks than the arena could hold",
                i + 1);
      MS_VERIFY(b % 8 == 0 && bounds(reinterpret_cast<void*>(b), bytes),
                "bin %zu links to %p (%zu bytes), which is not free memory of this arena: "
                "a freed block was overwritten", i + 1, reinterpret_cast<void*>(b), bytes);
      n++;
      in_bin++;
      if (++steps % 2 == 0) slow = link(slow) & ~uintptr_t{kMaxTag};
    }
    MS_VERIFY(in_bin == count_of(i), "bin %zu holds %zu blocks, its counter says %zu", i + 1,
              in_bin, count_of(i));
  }
  return true;
}

}  // namespace metaspace
