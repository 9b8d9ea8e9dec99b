// Layer 3: the nodes of one space. The non-class space grows a node at a time; the compressed
// class space is one fixed node (its range is what narrow pointers encode), and full means full.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <memory>
#include <vector>

#include "vspace/node_map.hpp"
#include "vspace/virtual_space_node.hpp"

namespace metaspace {

class VirtualSpaceList {
 public:
  struct Layout {
    // Grows node by node (the non-class space), reserving its first node lazily; else one node
    // reserved now (the class space), failure reported through ok().
    bool expandable;
    uintptr_t wish = 0;  // the fixed node's base, if non-zero
  };

  VirtualSpaceList(const NodeGeometry& geometry, CommitLimiter& limiter, const Layout& layout);

  bool ok() const { return expandable_ ? node_map_.ok() : fixed_ != nullptr; }
  bool expandable() const { return expandable_; }

  // A fresh, uncommitted root chunk area and the node it is in; null with the error set when the
  // space is exhausted or a new node cannot be reserved.
  char* allocate_root_chunk(VirtualSpaceNode** node);

  // Unmaps a node none of whose memory is in use any more (the caller guarantees it). If the
  // kernel refuses, the node stays in the list and the error is returned.
  ms_error_t remove_node(VirtualSpaceNode* node);

  const std::vector<std::unique_ptr<VirtualSpaceNode>>& nodes() const { return nodes_; }
  // O(1) for every node, without the chunk manager's lock (see NodeMap); the fixed node, and the
  // first node of an expandable list until a second one comes, by its range.
  VirtualSpaceNode* node_containing(const void* p) const {
    if (fixed_ != nullptr) {
      return reinterpret_cast<uintptr_t>(p) - fixed_base_ < fixed_bytes_ ? fixed_ : nullptr;
    }
    if (VirtualSpaceNode* sole = sole_.load(std::memory_order_acquire)) {
      return sole->contains(p) ? sole : nullptr;
    }
    return node_map_.find(p);
  }
  const NodeGeometry& geometry() const { return geometry_; }
  // Where the chunk headers the nodes' chunk start tables name come from (the chunk layer's
  // slabs, made after the list): set on every node, now and as they come.
  void set_chunk_header_base(const char* header_base);

  // O(1), lock-free: counters kept by the nodes as they commit and uncommit.
  size_t reserved_bytes() const { return reserved_.load(std::memory_order_relaxed); }
  size_t committed_bytes() const { return committed_.load(std::memory_order_relaxed); }
  size_t commit_calls() const;
  size_t uncommit_calls() const;
  // Bytes of the space's own bookkeeping at this layer, all in ranges it maps itself: the nodes'
  // commit masks, area flags and chunk start table pages in use (NodeBookkeeping) and the node
  // map's table. O(1), lock-free: part of the space's `overhead`.
  size_t bookkeeping_bytes() const { return bookkeeping_.load(std::memory_order_relaxed); }
  // Returns the nodes' empty bookkeeping pages; the bytes given back. Caller holds the writers'
  // lock.
  size_t purge_bookkeeping();

  bool verify() const;

 private:
  const NodeGeometry geometry_;
  CommitLimiter& limiter_;
  const bool expandable_;
  ms_error_t add_node(std::unique_ptr<VirtualSpaceNode> node);

  // Declared before the node map and the nodes: their destructors give back what they counted.
  std::atomic<size_t> reserved_{0};
  std::atomic<size_t> committed_{0};
  std::atomic<size_t> bookkeeping_{0};
  // Address -> node of an expandable list. The fixed list (the class space) has one node and
  // needs no map: its table cost a class space 16 KiB (1 024 slots for the 256 root areas of
  // 1 GiB) before anything was allocated.
  NodeMap node_map_;
  // An expandable list's only node while the map was never needed: found by its range, like the
  // fixed node, so a space that stays in one node (most programs: 64 MiB) pays no map table (a
  // page; 0.05 % of live at the lab's jdk25-many-loaders worst sample). The second node puts
  // both in the map, then clears this (a reader that still saw it asks about the first node).
  // Once the map has a table it stays in use.
  std::atomic<VirtualSpaceNode*> sole_{nullptr};
  const char* chunk_header_base_ = nullptr;
  VirtualSpaceNode* fixed_ = nullptr;
  uintptr_t fixed_base_ = 0;
  size_t fixed_bytes_ = 0;
  std::vector<std::unique_ptr<VirtualSpaceNode>> nodes_;
  // Kernel calls of nodes already unmapped, so the totals never go backwards.
  size_t retired_commit_calls_ = 0;
  size_t retired_uncommit_calls_ = 0;
};

}  // namespace metaspace
