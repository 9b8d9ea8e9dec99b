#include "arena/free_blocks.hpp"

#include "arena/fence.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
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

// A free block's list header (link or tree node) holds its tag: a tag the library writes names
// an origin and agrees with where the block lies. A block the runtime freed (checked mode) is
// followed by its fence, marked freed (also the rest of a split one: it ends where the freed
// block ended), and past its header still holds the zap pattern.
const char* FreeBlocks::damage(const void* block, size_t bytes, unsigned tag, size_t header,
                               const BlockBounds& bounds, bool whole, bool read_past) const {
  if (!tag_sound(block, tag)) return "its list header is not one the library wrote";
  const char* b = static_cast<const char*>(block);
  auto fenced = [&] {
    return bounds(b, bytes + Fence::kBytes) && reinterpret_cast<const Fence*>(b + bytes)->freed();
  };
  if (static_cast<BlockOrigin>(tag & (kForeignTag - 1)) != BlockOrigin::kDeallocated) {
    // A chunk tail ends where the chunk does, a class alignment gap where an aligned block
    // starts: only a freed block has a freed fence right behind it (its canary is bound to
    // its address), so one there means the header's tag was overwritten. What lies there may
    // be a block another thread of a shared loader is writing: then it is not read.
    return read_past && fenced() ? "its list header's origin was overwritten" : nullptr;
  }
  if (!fenced()) return "the freed fence behind it is gone";
  if (whole) {
    for (size_t i = header; i < bytes; i++) {
      if (static_cast<unsigned char>(b[i]) != Fence::kZapFreed) return "its zap pattern changed";
    }
  }
  return nullptr;
}

void* FreeBlocks::take_checked(size_t bytes, const BlockBounds& bounds, bool read_past,
                               size_t* got_bytes, BlockOrigin* origin, bool* damaged) {
  *damaged = false;
  size_t words = bytes / 8;
  // The block take() would hand out: a bin's first block, else the tree's best fit.
  const ms__free_bin* bin = nullptr;
  size_t got_words = 0;
  if (words <= BinList::kMaxWords) bin = bins_.bin_for(words, &got_words);
  if (bin == nullptr && medium() != nullptr && words <= MediumBins::kMaxWords) {
    bin = medium()->bin_for(words, &got_words);
  }
  const void* block = nullptr;
  const char* why = nullptr;
  if (bin != nullptr) {
    // The bin's first block, and the one its link makes the first: both where blocks of this
    // arena lie, with headers and fences of free blocks.
    block = reinterpret_cast<const void*>(bin->first);
    if (!exact_bins::head_sound(*bin, got_words, bounds)) {
      why = "its list link leads out of this arena's memory";
    } else {
      uintptr_t link = exact_bins::link(bin->first);
      auto tag = static_cast<unsigned>(link & exact_bins::kTagMask);
      why = damage(block, got_words * 8, tag, sizeof(uintptr_t), bounds, true, read_past);
      uintptr_t next = link & ~uintptr_t{exact_bins::kTagMask};
      if (why == nullptr && next != 0) {
        auto next_tag = static_cast<unsigned>(exact_bins::link(next) & exact_bins::kTagMask);
        if (damage(reinterpret_cast<const void*>(next), got_words * 8, next_tag,
                   sizeof(uintptr_t), bounds, false, read_past) != nullptr) {
          why = "its list link leads to no free block";
        }
      }
    }
  } else {
    unsigned tag = 0;
    if (!tree_.peek_checked(words, bounds, &block, &got_words, &tag)) {
      *damaged = true;
      fail(MS_ERR_OVERWRITE, "the tree of larger free blocks was overwritten after a block was "
           "freed: a node on the way to a block of %zu bytes is not intact", bytes);
      return nullptr;
    }
    if (block == nullptr) return nullptr;
    why = damage(block, got_words * 8, tag, BlockTree::kNodeBytes, bounds, true, read_past);
  }
  if (why != nullptr) {
    *damaged = true;
    fail(MS_ERR_OVERWRITE, "free block %p (%zu bytes) was written after it was freed: %s", block,
         got_words * 8, why);
    return nullptr;
  }
  void* p = take(bytes, got_bytes, origin);
  MS_ASSERT(p == block && *got_bytes == got_words * 8, "checked take found %p (%zu words), "
            "take %p", block, got_words, p);
  return p;
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
  auto check_tag = [&](void* p, size_t, unsigned tag) { tags_ok = tags_ok && tag_sound(p, tag); };
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
