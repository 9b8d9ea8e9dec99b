// A chunk header. Headers live outside the chunk's memory (in the ChunkHeaderPool), so splitting,
// merging and uncommitting never touch a chunk's pages, which may not even be committed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/assert.hpp"
#include "common/relative_link.hpp"

namespace metaspace {

struct Chunk;

// A link from a chunk header to another (common/relative_link.hpp): headers are slab objects of
// one space's bookkeeping range.
using ChunkLink = RelativeLink<Chunk>;

struct Chunk {
  // kUnused: a header in the pool, or back in the slabs. It is 0 so that a released header whose
  // slab page was emptied and uncommitted (zeros) still reads "no longer a chunk", never kFree.
  enum class State : uint8_t { kUnused, kFree, kInUse };

  char* base = nullptr;
  // In-use chunks: the arena that holds it (set by the arena, cleared when the chunk comes back);
  // null otherwise. Read without the chunk manager's lock by ownership checks (owner_is), so it
  // is accessed atomically.
  const void* owner = nullptr;
  // A chunk is at most a root chunk, at most 64 MiB (Settings): sizes fit 32 bits.
  uint32_t bytes = 0;
  // [base, base + committed_bytes) is committed. A lower bound: the commit mask may know more
  // (a merge can join a partly committed leader with a committed follower).
  uint32_t committed_bytes = 0;
  // In-use chunks: bytes consumed by the owning arena from the bottom (kept by the arena).
  uint32_t used_bytes = 0;
  uint8_t level = 0;
  State state = State::kUnused;
  // In-use chunks of the micro pool (loader/micro_pool.hpp): where the chunk's first hole lies,
  // in hole units from base, plus one; 0: no hole.
  uint16_t first_hole = 0;

  // Free list of its level, or the owning arena's chunk list.
  ChunkLink prev;
  ChunkLink next;
  // Address-ordered neighbours within the root chunk area: buddies are found through these.
  ChunkLink prev_in_area;
  ChunkLink next_in_area;

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

  // What the header alone can tell of a chunk (free or in use): a power-of-two size of a level
  // (the size times 2^level is a root chunk's size), a base aligned to it, committed and used
  // bytes within it, a free chunk owned by no one and with nothing used, and neighbours in the
  // root chunk area that touch it and link back. The caller holds the chunk manager's lock and
  // the chunk (used_bytes is its holder's): the manager checks the chunks it hands out and takes
  // back. The area as a whole: RootChunkArea::verify.
  bool verify() const;
};

// 48 bytes, a 48-byte slab object: 84 headers to a slab page (docs/bookkeeping.md, "Chunk
// headers of 48 bytes"). Links are 32 bits, and the header does not name its node: the chunk's
// address finds it in O(1)
// (VirtualSpaceList::node_containing), on the chunk manager's paths that need it (commit,
// uncommit, chunk starts), none of them per block.
static_assert(sizeof(Chunk) <= 48, "a chunk header must fit a 48-byte slab object");

}  // namespace metaspace
