// A context is one space: its virtual space list and the chunk manager on top of it. A metaspace
// has two, non-class and compressed class space; tests build private ones.
#pragma once

#include <metaspace/types.h>

#include <memory>

#include "chunks/chunk_manager.hpp"
#include "common/units.hpp"
#include "slab/slab_allocator.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {

// The most address space for a space's bookkeeping range; only the pages in use cost memory. A
// metaspace sizes its ranges from its settings (bookkeeping_range_bytes, instance/settings.hpp).
constexpr size_t kBookkeepingReserveBytes = 4 * GiB;
static_assert(kBookkeepingReserveBytes <= ChunkStartTable::kHeaderRangeBytes,
              "a 4-byte chunk start slot must be able to name every chunk header");

// Where a context's slabs come from, and whether its overhead counts them. A metaspace's two
// spaces share one slab allocator: the class space makes it (after its own range, see below) and
// the non-class space borrows it and counts it. With one each, the class space's chunk headers
// (18 at the lab's smallest trace with deaths) held a slab page of their own beside the non-class
// space's (docs/bookkeeping.md, "One slab allocator for both spaces").
struct ContextBookkeeping {
  SlabAllocator* shared = nullptr;  // borrow this one; null: make one's own
  bool counted = true;              // its pages are part of this space's overhead
  size_t reserve_bytes = kBookkeepingReserveBytes;  // one's own: its address space
  const char* name = nullptr;       // one's own: what it is for and what sizes it (errors)
};

class Context {
 public:
  // The class space is one fixed node at `wish` (or anywhere, see ok()); the non-class space
  // grows node by node.
  Context(ms_space_t space, const NodeGeometry& geometry, CommitLimiter& limiter,
          ReclaimPolicy policy, uintptr_t wish, const ContextBookkeeping& bookkeeping = {});

  bool ok() const { return bookkeeping_->ok() && vslist_.ok(); }
  ms_space_t space() const { return space_; }
  VirtualSpaceList& vslist() { return vslist_; }
  const VirtualSpaceList& vslist() const { return vslist_; }
  // The structures the space's layers make (chunk headers, free-block structures; in a
  // metaspace, those of both spaces: ContextBookkeeping).
  SlabAllocator& bookkeeping() { return *bookkeeping_; }
  const SlabAllocator& bookkeeping() const { return *bookkeeping_; }
  // The slabs' pages are part of this space's overhead (ContextBookkeeping::counted).
  bool counts_bookkeeping() const { return counts_bookkeeping_; }
  // Everything the space holds for itself, part of its committed memory: the slabs if it counts
  // them, and the nodes' own ranges (commit masks, chunk start tables, the node map). O(1),
  // lock-free.
  size_t overhead_bytes() const {
    return (counts_bookkeeping_ ? bookkeeping_->committed_bytes() : 0) +
           vslist_.bookkeeping_bytes();
  }
  ChunkManager& chunks() { return chunks_; }
  const ChunkManager& chunks() const { return chunks_; }

  bool verify() const { return chunks_.verify() && bookkeeping_->verify(); }

 private:
  const ms_space_t space_;
  // The space's own range first (a class space placed at a requested base must get it before
  // the bookkeeping reservation can land there), then the bookkeeping.
  VirtualSpaceList vslist_;
  std::unique_ptr<SlabAllocator> own_bookkeeping_;  // unless borrowed
  SlabAllocator* bookkeeping_;
  const bool counts_bookkeeping_;
  ChunkManager chunks_;
};

}  // namespace metaspace
