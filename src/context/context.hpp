// A context is one space: its virtual space list and the chunk manager on top of it. A metaspace
// has two, non-class and compressed class space; tests build private ones.
#pragma once

#include <metaspace/metaspace.h>

#include <memory>

#include "chunks/chunk_manager.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {

class Context {
 public:
  // The class space is one fixed node at `wish` (or anywhere, see ok()); the non-class space
  // grows node by node.
  Context(ms_space_t space, const NodeGeometry& geometry, CommitLimiter& limiter,
          ReclaimPolicy policy, uintptr_t wish);

  bool ok() const { return vslist_.ok(); }
  ms_space_t space() const { return space_; }
  VirtualSpaceList& vslist() { return vslist_; }
  const VirtualSpaceList& vslist() const { return vslist_; }
  ChunkManager& chunks() { return chunks_; }
  const ChunkManager& chunks() const { return chunks_; }

  bool contains(const void* p) const;
  bool verify() const { return chunks_.verify(); }

 private:
  const ms_space_t space_;
  VirtualSpaceList vslist_;
  ChunkManager chunks_;
};

}  // namespace metaspace
