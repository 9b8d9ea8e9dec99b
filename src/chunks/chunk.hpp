// A chunk header. Headers live outside the chunk's memory (in the ChunkHeaderPool), so splitting,
// merging and uncommitting never touch a chunk's pages, which may not even be committed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace {

class VirtualSpaceNode;

struct Chunk {
  enum class State : uint8_t { kFree, kInUse, kUnused /* header back in the pool */ };

  char* base = nullptr;
  size_t bytes = 0;
  VirtualSpaceNode* node = nullptr;
  int level = 0;
  State state = State::kUnused;

  // [base, base + committed_bytes) is committed. A lower bound: the commit mask may know more
  // (a merge can join a partly committed leader with a committed follower).
  size_t committed_bytes = 0;
  // In-use chunks: bytes consumed by the owning arena from the bottom (kept by the arena).
  size_t used_bytes = 0;

  // Free list of its level, or the owning arena's chunk list.
  Chunk* prev = nullptr;
  Chunk* next = nullptr;
  // Address-ordered neighbours within the root chunk area: buddies are found through these.
  Chunk* prev_in_area = nullptr;
  Chunk* next_in_area = nullptr;

  char* end() const { return base + bytes; }
  bool is_free() const { return state == State::kFree; }
  bool fully_committed() const { return committed_bytes == bytes; }
  bool contains(const void* p) const { return p >= base && p < end(); }
};

}  // namespace metaspace
