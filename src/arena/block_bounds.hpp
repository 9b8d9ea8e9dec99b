// What a free-block verifier may read. The free lists live inside the blocks, so a stray write by
// the runtime (a write into a freed block, a double free that links a block to itself) turns a
// link into garbage. Verification follows a link only after the owner has confirmed that the
// block it names lies in memory the owner handed out, detects cycles (a double free links a
// block to itself) and visits at most max_blocks blocks: a smashed list is reported, never
// chased and never looped over, even when the counters themselves wrapped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace {

struct BlockBounds {
  // True if [p, p + bytes) may be read as a free block; null accepts everything (unit tests).
  bool (*contains)(const void* owner, const void* p, size_t bytes) = nullptr;
  const void* owner = nullptr;
  // No walk visits more blocks than this, whatever the (possibly corrupted) counters say: the
  // owner's handed-out bytes / 8 bounds the number of distinct blocks.
  size_t max_blocks = SIZE_MAX;

  bool operator()(const void* p, size_t bytes) const {
    return contains == nullptr || contains(owner, p, bytes);
  }
};

}  // namespace metaspace
