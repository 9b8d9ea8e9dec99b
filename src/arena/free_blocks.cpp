#include "arena/free_blocks.hpp"

#include "common/assert.hpp"
#include "common/verify.hpp"

namespace metaspace {

void FreeBlocks::attach_medium(MediumBins* medium) {
  MS_ASSERT(this->medium() == nullptr && medium != nullptr && medium->empty(),
            "medium bins attached twice");
  bins_.shared_state().medium = &medium->shared_state();  // the inline paths use it from now on
  for (;;) {
    size_t got = 0;
    unsigned tag = 0;
    void* p = tree_.take(MediumBins::kMinWords, &got, &tag);
    if (p == nullptr) break;
    if (!MediumBins::fits(got)) {
      tree_.add(p, got, tag);
      break;
    }
    medium->add(p, got, tag);
  }
}

bool FreeBlocks::verify(const BlockBounds& bounds) const {
  if (!bins_.verify(bounds) || !tree_.verify(bounds)) return false;
  if (medium() != nullptr && !medium()->verify(bounds)) return false;
  bool disjoint = true;
  if (medium() != nullptr) {
    tree_.for_each([&](void*, size_t words, unsigned) {
      disjoint = disjoint && words > MediumBins::kMaxWords;
    });
  }
  MS_VERIFY(disjoint, "a tree block of a medium bin's size: best fit would miss it");
  size_t counted[kBlockOrigins][2] = {};
  bool tags_ok = true;
  auto check_tag = [&](void* p, size_t, unsigned tag) {
    tags_ok = tags_ok && (tag >= kForeignTag) == foreign(p) &&
              (tag & (kForeignTag - 1)) < static_cast<unsigned>(kBlockOrigins);
  };
  bins_.for_each(check_tag);
  if (medium() != nullptr) medium()->for_each(check_tag);
  tree_.for_each(check_tag);
  MS_VERIFY(tags_ok, "a free block's tag disagrees with where it lies");
  for_each([&](void* p, size_t bytes, BlockOrigin origin) {
    counted[static_cast<int>(origin)][foreign(p) ? 1 : 0] += bytes;
  });
  for (int o = 0; o < kBlockOrigins; o++) {
    for (int f = 0; f < 2; f++) {
      MS_VERIFY(counted[o][f] == bytes_of(static_cast<BlockOrigin>(o), f == 1),
                "free blocks of origin %d (foreign %d) hold %zu bytes, counter says %zu", o, f,
                counted[o][f], bytes_of(static_cast<BlockOrigin>(o), f == 1));
    }
  }
  return true;
}

}  // namespace metaspace
