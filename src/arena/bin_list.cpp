#include "arena/bin_list.hpp"

#include <bit>

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

void BinList::add(void* p, size_t words, unsigned tag) {
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

void* BinList::take(size_t words, size_t* got_words, unsigned* tag) {
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
