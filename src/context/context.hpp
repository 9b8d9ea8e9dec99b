// A context is one space: its virtual space list and the chunk manager on top of it. A metaspace
// has two, non-class and compressed class space; tests build private ones.
#pragma once

#include <metaspace/metaspace.h>

#include <memory>

#include "chunks/chunk_manager.hpp"
#include "common/units.hpp"
#include "slab/slab_allocator.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {

// Address space for a space's bookkeeping; only the pages in use cost memory. 1 M micro loaders
// need about 1.5 GiB of it in the non-class space (loader objects, headers, free-block
// structures).
constexpr size_t kBookkeepingReserveBytes = 4 * GiB;
static_assert(kBookkeepingReserveBytes <= ChunkStartTable::kHeaderRangeBytes,
              "a 4-byte chunk start slot must be able to name every chunk header");

class Context {
 public:
  // The class space is one fixed node at `wish` (or anywhere, see ok()); the non-class space
  // grows node by node.
  Context(ms_space_t space, const NodeGeometry& geometry, CommitLimiter& limiter,
          ReclaimPolicy policy, uintptr_t wish);

  bool ok() const { return bookkeeping_.ok() && vslist_.ok(); }
  ms_space_t space() const { return space_; }
  VirtualSpaceList& vslist() { return vslist_; }
  const VirtualSpaceList& vslist() const { return vslist_; }
  // The space's own structures (chunk headers, commit masks, free-block structures; loader
  // objects in the non-class space): part of its committed memory, the `overhead`.
  SlabAllocator& bookkeeping() { return bookkeeping_; }
  const SlabAllocator& bookkeeping() const { return bookkeeping_; }
  // Everything the space holds for itself, part of its committed memory: the slabs (chunk
  // headers, free-block structures, loader objects) and the nodes' own ranges (commit masks,
  // chunk start tables, the node map). O(1), lock-free.
  size_t overhead_bytes() const {
    return bookkeeping_.committed_bytes() + vslist_.bookkeeping_bytes();
  }
  ChunkManager& chunks() { return chunks_; }
  const ChunkManager& chunks() const { return chunks_; }

  bool verify() const { return chunks_.verify() && bookkeeping_.verify(); }

 private:
  const ms_space_t space_;
  // The space's own range first (a class space placed at a requested base must get it before
  // the bookkeeping reservation can land there), then the bookkeeping.
  VirtualSpaceList vslist_;
  SlabAllocator bookkeeping_;
  ChunkManager chunks_;
};

}  // namespace metaspace
