#include "arena/medium_bins.hpp"

#include "common/verify.hpp"

namespace metaspace {

bool MediumBins::verify(const BlockBounds& bounds) const {
  size_t n = 0;
  for (size_t i = 0; i < kBins; i++) {
    MS_VERIFY(((bins_.mask[i / 64] >> (i % 64)) & 1) == (bins_.bin[i].first != 0 ? 1u : 0u),
              "medium bin %zu mask bit wrong", i + kMinWords);
    size_t bytes = (i + kMinWords) * 8;
    uintptr_t slow = bins_.bin[i].first;
    size_t steps = 0, in_bin = 0;
    for (uintptr_t b = bins_.bin[i].first; b != 0; b = link(b) & ~uintptr_t{kMaxTag}) {
      MS_VERIFY(steps == 0 || b != slow, "medium bin %zu is a cycle through %p: a block freed twice?",
                i + kMinWords, reinterpret_cast<void*>(b));
      MS_VERIFY(n < bounds.max_blocks, "medium bin %zu: more blocks than the arena could hold",
                i + kMinWords);
      MS_VERIFY(b % 8 == 0 && bounds(reinterpret_cast<void*>(b), bytes),
                "medium bin %zu links to %p (%zu bytes), which is not free memory of this arena: "
                "a freed block was overwritten", i + kMinWords, reinterpret_cast<void*>(b), bytes);
      n++;
      in_bin++;
      if (++steps % 2 == 0) slow = link(slow) & ~uintptr_t{kMaxTag};
    }
    MS_VERIFY(in_bin == count_of(i), "medium bin %zu holds %zu blocks, its counter says %zu",
              i + kMinWords, in_bin, count_of(i));
  }
  return true;
}

}  // namespace metaspace
