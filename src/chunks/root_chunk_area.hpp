// The buddy system inside one root chunk area.
//
// Chunks of an area tile it exactly and are linked in address order. A chunk of level L at offset
// o (from the area base) has its buddy at o ^ size(L); the lower of the two is the leader. Merged
// chunks keep the leader's header, so the header of an area's first chunk never changes, which
// lets the area be walked from it for verification.
#pragma once

#include "chunks/chunk.hpp"
#include "chunks/chunk_header_pool.hpp"
#include "chunks/chunk_level.hpp"
#include "chunks/free_chunk_lists.hpp"

namespace metaspace {

class VirtualSpaceNode;

class RootChunkArea {
 public:
  static bool is_leader(const Chunk* c, const ChunkGeometry& geometry);

  // The buddy if it exists as one chunk (same level, not split), else null.
  static Chunk* whole_buddy(const Chunk* c, const ChunkGeometry& geometry);

  // Splits `c` (not in any list) down to `level`, filing the split-off followers as free chunks.
  // `c` keeps its header and base and ends at `level`.
  static void split(Chunk* c, int level, ChunkHeaderPool& pool, FreeChunkLists& free_lists);

  // Merges the free chunk `c` (not in any list) with free buddies as far as possible; buddies are
  // taken off the free lists. Returns the merged chunk (not in any list).
  static Chunk* merge(Chunk* c, const ChunkGeometry& geometry, ChunkHeaderPool& pool,
                      FreeChunkLists& free_lists);

  // Doubles the in-use chunk `c` by absorbing its free, unsplit follower buddy.
  static bool enlarge(Chunk* c, const ChunkGeometry& geometry, ChunkHeaderPool& pool,
                      FreeChunkLists& free_lists);

  // What verify expects of free buddies: merged at once (every policy that merges), or free side
  // by side (the pre-elastic policy never merges).
  enum class FreeBuddies { kMayStayApart, kAlwaysMerged };

  // Walks the area starting at its first chunk: tiling, alignment, links, and the rule for free
  // buddies. Counts the chunks it sees. With the area's `node`, also that its chunk start table
  // finds every in-use chunk by its first and last byte and no free one.
  static bool verify(const Chunk* first, const VirtualSpaceNode* node,
                     const ChunkGeometry& geometry, FreeBuddies buddies, size_t* chunks,
                     size_t* free_chunks);

 private:
  // Joins leader `a` and follower `b` (same level, adjacent); `b`'s header goes back to the pool.
  static void join(Chunk* a, Chunk* b, ChunkHeaderPool& pool);
};

}  // namespace metaspace
