#include "arena/bin_list.hpp"

#include <bit>

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

bool BinList::verify(const BlockBounds& bounds) const {
  size_t n = 0;
  size_t w = 0;
  for (size_t i = 0; i < kBins; i++) {
    MS_VERIFY(((mask_ >> i) & 1) == (bins_[i] != nullptr ? 1u : 0u), "bin %zu mask bit wrong",
              i + 1);
    size_t bytes = (i + 1) * 8;
    // `slow` follows at half speed over blocks already checked: it meets `b` iff there is a
    // cycle (a block freed twice links to itself).
    const Block* slow = bins_[i];
    size_t steps = 0;
    for (Block* b = bins_[i]; b != nullptr; b = b->next()) {
      MS_VERIFY(steps == 0 || b != slow, "bin %zu is a cycle through %p: a block freed twice?",
                i + 1, (void*)b);
      MS_VERIFY(n < bounds.max_blocks, "bin %zu: more blocks than the arena could hold",
                i + 1);
      MS_VERIFY(reinterpret_cast<uintptr_t>(b) % 8 == 0 && bounds(b, bytes),
                "bin %zu links to %p (%zu bytes), which is not free memory of this arena: "
                "a freed block was overwritten", i + 1, (void*)b, bytes);
      n++;
      w += i + 1;
      if (++steps % 2 == 0) slow = slow->next();
    }
  }
  MS_VERIFY(n == count_ && w == words_, "bins hold %zu blocks / %zu words, counters say %zu / %zu",
            n, w, count_, words_);
  return true;
}

}  // namespace metaspace
