#include "chunks/root_chunk_area.hpp"

#include "common/assert.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {

bool RootChunkArea::is_leader(const Chunk* c, const ChunkGeometry& geometry) {
  size_t offset = static_cast<size_t>(c->base - align_down(c->base, geometry.root_bytes()));
  return (offset & c->bytes) == 0;
}

Chunk* RootChunkArea::whole_buddy(const Chunk* c, const ChunkGeometry& geometry) {
  if (c->level == 0) return nullptr;
  // If the neighbour on the buddy's side has the same level, alignment makes it the buddy.
  Chunk* n = is_leader(c, geometry) ? c->next_in_area : c->prev_in_area;
  return (n != nullptr && n->level == c->level) ? n : nullptr;
}

void RootChunkArea::split(Chunk* c, int level, ChunkHeaderPool& pool,
                          FreeChunkLists& free_lists) {
  MS_ASSERT(c->prev == nullptr && c->next == nullptr, "chunk %p split while in a list",
            (void*)c->base);
  MS_ASSERT(level > c->level, "split of a level %d chunk to level %d", c->level, level);
  while (c->level < level) {
    size_t half = c->bytes / 2;
    Chunk* f = pool.allocate();
    f->base = c->base + half;
    f->bytes = half;
    f->level = c->level + 1;
    f->committed_bytes = c->committed_bytes > half ? c->committed_bytes - half : 0;
    f->prev_in_area = c;
    f->next_in_area = c->next_in_area;
    if (c->next_in_area != nullptr) c->next_in_area->prev_in_area = f;
    c->next_in_area = f;
    // f is free: no start recorded (ChunkStartTable). c is free too until the manager hands it
    // out, so no reader holds it.
    c->bytes = half;
    c->level++;
    if (c->committed_bytes > half) c->committed_bytes = half;
    free_lists.add(f);
  }
}

void RootChunkArea::join(Chunk* a, Chunk* b, ChunkHeaderPool& pool) {
  // The result's committed prefix runs into b only if a is committed to its end.
  if (a->fully_committed()) a->committed_bytes += b->committed_bytes;
  // Atomic: a lookup without the lock may be reading the size of a chunk enlarged in place. b is
  // free and has no start to clear (ChunkStartTable records in-use chunks only).
  __atomic_store_n(&a->bytes, a->bytes * 2, __ATOMIC_RELAXED);
  a->level--;
  a->next_in_area = b->next_in_area;
  if (b->next_in_area != nullptr) b->next_in_area->prev_in_area = a;
  pool.release(b);
}

Chunk* RootChunkArea::merge(Chunk* c, const ChunkGeometry& geometry, ChunkHeaderPool& pool,
                            FreeChunkLists& free_lists) {
  MS_ASSERT(c->is_free() && c->prev == nullptr && c->next == nullptr,
            "chunk %p merged while in use or in a list", (void*)c->base);
  for (;;) {
    Chunk* buddy = whole_buddy(c, geometry);
    if (buddy == nullptr || !buddy->is_free()) return c;
    free_lists.remove(buddy);
    if (is_leader(c, geometry)) {
      join(c, buddy, pool);
    } else {
      join(buddy, c, pool);
      c = buddy;
    }
  }
}

bool RootChunkArea::enlarge(Chunk* c, const ChunkGeometry& geometry, ChunkHeaderPool& pool,
                            FreeChunkLists& free_lists) {
  if (c->level == 0 || !is_leader(c, geometry)) return false;
  Chunk* buddy = whole_buddy(c, geometry);
  if (buddy == nullptr || !buddy->is_free()) return false;
  free_lists.remove(buddy);
  join(c, buddy, pool);
  return true;
}

bool RootChunkArea::verify(const Chunk* first, const VirtualSpaceNode* node,
                           const ChunkGeometry& geometry, FreeBuddies buddies, size_t* chunks,
                           size_t* free_chunks) {
  char* area = first->base;
  MS_VERIFY(is_aligned(area, geometry.root_bytes()), "area %p misaligned", (void*)area);
  MS_VERIFY(first->prev_in_area == nullptr, "first chunk of %p has a predecessor", (void*)area);
  char* expected = area;
  const Chunk* prev = nullptr;
  for (const Chunk* c = first; c != nullptr; c = c->next_in_area) {
    MS_VERIFY(geometry.valid(c->level), "chunk %p has level %d", (void*)c->base, c->level);
    MS_VERIFY(c->bytes == geometry.bytes(c->level), "chunk %p: %zu bytes at level %d",
              (void*)c->base, size_t{c->bytes}, c->level);
    MS_VERIFY(c->base == expected, "chunk %p where %p was expected", (void*)c->base,
              (void*)expected);
    MS_VERIFY(is_aligned(c->base, c->bytes), "chunk %p not aligned to its size", (void*)c->base);
    MS_VERIFY(c->prev_in_area == prev, "chunk %p: broken back link", (void*)c->base);
    MS_VERIFY(c->state != Chunk::State::kUnused, "chunk %p: pooled header in area",
              (void*)c->base);
    MS_VERIFY(c->committed_bytes <= c->bytes, "chunk %p: committed %zu > size",
              (void*)c->base, size_t{c->committed_bytes});
    if (node != nullptr && !c->is_free()) {
      MS_VERIFY(node->chunk_starts().find(c->base) == c &&
                    node->chunk_starts().find(c->end() - 1) == c,
                "in-use chunk %p is not found by its addresses", (void*)c->base);
    } else if (node != nullptr) {
      // No start, and the nearest start below any of its addresses is a chunk that ends before.
      const Chunk* below = node->chunk_starts().find(c->end() - 1);
      MS_VERIFY(node->chunk_starts().at(c->base) == nullptr &&
                    (below == nullptr || below->end() <= c->base),
                "free chunk %p has a chunk start or is found by its addresses", (void*)c->base);
    }
    MS_VERIFY(!c->is_free() || c->owner_is(nullptr), "free chunk %p has an owner",
              (void*)c->base);
    if (buddies == FreeBuddies::kAlwaysMerged && c->is_free()) {
      const Chunk* b = whole_buddy(c, geometry);
      MS_VERIFY(b == nullptr || !b->is_free(), "free buddies %p and %p not merged",
                (void*)c->base, (void*)b->base);
    }
    (*chunks)++;
    if (c->is_free()) (*free_chunks)++;
    expected += c->bytes;
    prev = c;
  }
  MS_VERIFY(expected == area + geometry.root_bytes(), "area %p: chunks cover %zu bytes",
            (void*)area, static_cast<size_t>(expected - area));
  return true;
}

}  // namespace metaspace
