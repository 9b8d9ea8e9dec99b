// A chunk header. Headers live outside the chunk's memory (in the ChunkHeaderPool), so splitting,
// merging and uncommitting never touch a chunk's pages, which may not even be committed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace {

class VirtualSpaceNode;

struct Chunk {
  // kUnused: a header in the pool, or back in the slabs. It is 0 so that a released header whose
  // slab page was emptied and uncommitted (zeros) still reads "no longer a chunk", never kFree.
  enum class State : uint8_t { kUnused, kFree, kInUse };

  char* base = nullptr;
  size_t bytes = 0;
  VirtualSpaceNode* node = nullptr;
  int level = 0;
  State state = State::kUnused;
  // In-use chunks of the micro pool (loader/micro_pool.hpp): where the chunk's first hole lies,
  // in hole units from base, plus one; 0: no hole. Kept in the padding behind state, so the
  // header stays 80 bytes (a pointer here would add 8 bytes to every chunk header).
  uint16_t first_hole = 0;

  // [base, base + committed_bytes) is committed. A lower bound: the commit mask may know more
  // (a merge can join a partly committed leader with a committed follower).
  uint32_t committed_bytes = 0;
  // In-use chunks: bytes consumed by the owning arena from the bottom (kept by the arena).
  // Both fit 32 bits (a chunk is at most a root chunk, at most 64 MiB: Settings); as two words
  // they made the header 88 bytes, 42 to a slab page instead of 50.
  uint32_t used_bytes = 0;
  // In-use chunks: the arena that holds it (set by the arena, cleared when the chunk comes back);
  // null otherwise. Read without the chunk manager's lock by ownership checks (owner_is), so it
  // is accessed atomically.
  const void* owner = nullptr;

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
  // contains() for lookups without the chunk manager's lock (ChunkManager::chunk_containing):
  // the size is read atomically, since the owner of an in-use chunk may be enlarging it.
  bool contains_unlocked(const void* p) const {
    const char* q = static_cast<const char*>(p);
    return q >= base &&
           static_cast<size_t>(q - base) < __atomic_load_n(&bytes, __ATOMIC_RELAXED);
  }

  void set_owner(const void* arena) { __atomic_store_n(&owner, arena, __ATOMIC_RELEASE); }
  bool owner_is(const void* arena) const {
    return __atomic_load_n(&owner, __ATOMIC_ACQUIRE) == arena;
  }
};

static_assert(sizeof(Chunk) == 80, "Chunk::first_hole must stay in the padding");

}  // namespace metaspace
