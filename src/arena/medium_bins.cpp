#include "arena/medium_bins.hpp"

#include "common/verify.hpp"

namespace metaspace {

bool MediumBins::verify(const BlockBounds& bounds) const {
  size_t n = 0, w = 0;
  for (size_t i = 0; i < kBins; i++) {
    MS_VERIFY(((mask_[i / 64] >> (i % 64)) & 1) == (first_[i] != 0 ? 1u : 0u),
              "medium bin %zu mask bit wrong", i + kMinWords);
    size_t bytes = (i + kMinWords) * 8;
    uintptr_t slow = first_[i];
    size_t steps = 0, in_bin = 0;
    for (uintptr_t b = first_[i]; b != 0; b = link(b) & ~uintptr_t{kMaxTag}) {
      MS_VERIFY(steps == 0 || b != slow, "medium bin %zu is a cycle through %p: a block freed twice?",
                i + kMinWords, reinterpret_cast<void*>(b));
      MS_VERIFY(n < bounds.max_blocks, "medium bin %zu: more blocks than the arena could hold",
                i + kMinWords);
      MS_VERIFY(b % 8 == 0 && bounds(reinterpret_cast<void*>(b), bytes),
                "medium bin %zu links to %p (%zu bytes), which is not free memory of this arena: "
                "a freed block was overwritten", i + kMinWords, reinterpret_cast<void*>(b), bytes);
      n++;
      in_bin++;
      w += i + kMinWords;
      if (++steps % 2 == 0) slow = link(slow) & ~uintptr_t{kMaxTag};
    }
    MS_VERIFY(in_bin == count_[i], "medium bin %zu holds %zu blocks, its counter says %zu",
              i + kMinWords, in_bin, count_[i]);
  }
  MS_VERIFY(n == count_all_ && w == words_,
            "medium bins hold %zu blocks / %zu words, counters say %zu / %zu", n, w, count_all_,
            words_);
  return true;
}

}  // namespace metaspace
