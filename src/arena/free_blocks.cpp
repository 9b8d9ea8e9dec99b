#include "arena/free_blocks.hpp"

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

void FreeBlocks::add(void* p, size_t bytes, BlockOrigin origin) {
  MS_ASSERT(bytes >= 8 && bytes % 8 == 0, "free block %p of %zu bytes", p, bytes);
  size_t words = bytes / 8;
  unsigned tag = static_cast<unsigned>(origin);
  if (words <= BinList::kMaxWords) {
    bins_.add(p, words, tag);
  } else {
    tree_.add(p, words, tag);
  }
  bytes_by_[tag][foreign(p) ? 1 : 0] += bytes;
}

void* FreeBlocks::take(size_t bytes, size_t* got_bytes, BlockOrigin* origin) {
  size_t words = bytes / 8;
  size_t got_words = 0;
  unsigned tag = 0;
  void* p = nullptr;
  if (words <= BinList::kMaxWords) p = bins_.take(words, &got_words, &tag);
  // Every tree block is larger than every bin block, so the bins' answer, if any, is the best.
  if (p == nullptr) p = tree_.take(words, &got_words, &tag);
  if (p == nullptr) return nullptr;
  *got_bytes = got_words * 8;
  bytes_by_[tag][foreign(p) ? 1 : 0] -= *got_bytes;
  if (origin != nullptr) *origin = static_cast<BlockOrigin>(tag);
  return p;
}

size_t FreeBlocks::largest_bytes() const {
  return (tree_.empty() ? bins_.largest_words() : tree_.largest_words()) * 8;
}

bool FreeBlocks::verify(const BlockBounds& bounds) const {
  if (!bins_.verify(bounds) || !tree_.verify(bounds)) return false;
  size_t counted[kBlockOrigins][2] = {};
  for_each([&](void* p, size_t bytes, BlockOrigin origin) {
    counted[static_cast<int>(origin)][foreign(p) ? 1 : 0] += bytes;
  });
  for (int o = 0; o < kBlockOrigins; o++) {
    for (int f = 0; f < 2; f++) {
      MS_VERIFY(counted[o][f] == bytes_by_[o][f],
                "free blocks of origin %d (foreign %d) hold %zu bytes, counter says %zu", o, f,
                counted[o][f], bytes_by_[o][f]);
    }
  }
  return true;
}

}  // namespace metaspace
