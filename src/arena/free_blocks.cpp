#include "arena/free_blocks.hpp"

#include "common/verify.hpp"

namespace metaspace {

void FreeBlocks::add(void* p, size_t bytes) {
  size_t words = bytes / 8;
  if (words <= BinList::kMaxWords) {
    bins_.add(p, words);
  } else {
    tree_.add(p, words);
  }
  if (foreign(p)) foreign_bytes_ += bytes;
}

void* FreeBlocks::take(size_t bytes, size_t* got_bytes) {
  size_t words = bytes / 8;
  size_t got_words = 0;
  void* p = nullptr;
  if (words <= BinList::kMaxWords) p = bins_.take(words, &got_words);
  // Every tree block is larger than every bin block, so the bins' answer, if any, is the best.
  if (p == nullptr) p = tree_.take(words, &got_words);
  if (p == nullptr) return nullptr;
  *got_bytes = got_words * 8;
  if (foreign(p)) foreign_bytes_ -= *got_bytes;
  return p;
}

size_t FreeBlocks::largest_bytes() const {
  if (!tree_.empty()) return tree_.largest_words() * 8;
  size_t largest = 0;
  bins_.for_each([&](void*, size_t words) { largest = words > largest ? words : largest; });
  return largest * 8;
}

bool FreeBlocks::verify() const {
  if (!bins_.verify() || !tree_.verify()) return false;
  size_t foreign_total = 0;
  for_each([&](void* p, size_t bytes) {
    if (foreign(p)) foreign_total += bytes;
  });
  MS_VERIFY(foreign_total == foreign_bytes_, "foreign blocks hold %zu bytes, counter says %zu",
            foreign_total, foreign_bytes_);
  return true;
}

}  // namespace metaspace
