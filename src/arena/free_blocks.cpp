#include "arena/free_blocks.hpp"

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

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
