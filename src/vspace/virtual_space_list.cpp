#include "vspace/virtual_space_list.hpp"

#include <algorithm>

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/verify.hpp"

namespace metaspace {

VirtualSpaceList::VirtualSpaceList(const NodeGeometry& geometry, CommitLimiter& limiter,
                                   const Layout& layout)
    : geometry_(geometry), limiter_(limiter), expandable_(layout.expandable),
      node_map_(geometry.root_chunk_bytes, &bookkeeping_) {
  MS_ASSERT(!layout.expandable || layout.wish == 0, "an expandable list has no fixed base");
  if (expandable_) {
    // A failure shows in ok().
    if (node_map_.init() != MS_OK) append_error(" for the non-class space's node map (sized from the root chunk size)");
    return;
  }
  // The fixed node, found by its range (no map). Failures show in ok().
  auto node = VirtualSpaceNode::create(geometry, layout.wish, limiter, &committed_,
                                       &bookkeeping_);
  if (node) {
    (void)add_node(std::move(node));
  } else {
    append_error(" for the class space (class_space_bytes)");
  }
}

ms_error_t VirtualSpaceList::add_node(std::unique_ptr<VirtualSpaceNode> node) {
  // Room first: a heap allocation that fails here (std::bad_alloc, turned into
  // MS_ERR_OUT_OF_MEMORY at the C API) must leave no node half-added; then the map, which may
  // refuse (the node is destroyed, its range released).
  nodes_.reserve(nodes_.size() + 1);
  if (!expandable_) {
    MS_ASSERT(nodes_.empty(), "a fixed list has one node");
    fixed_base_ = reinterpret_cast<uintptr_t>(node->base());
    fixed_bytes_ = node->reserved_bytes();
    fixed_ = node.get();
  } else if (nodes_.empty() && !node_map_.has_table()) {
    sole_.store(node.get(), std::memory_order_release);
  } else {
    // The sole node goes into the map first; readers switch to the map once both are in it.
    VirtualSpaceNode* sole = sole_.load(std::memory_order_relaxed);
    if (sole != nullptr) {
      if (ms_error_t err = node_map_.add(sole->base(), sole->reserved_bytes(), sole);
          err != MS_OK) {
        return err;
      }
    }
    if (ms_error_t err = node_map_.add(node->base(), node->reserved_bytes(), node.get());
        err != MS_OK) {
      if (sole != nullptr) node_map_.remove(sole->base(), sole->reserved_bytes());
      return err;
    }
    sole_.store(nullptr, std::memory_order_release);
  }
  reserved_.fetch_add(node->reserved_bytes(), std::memory_order_relaxed);
  nodes_.push_back(std::move(node));
  return MS_OK;
}

char* VirtualSpaceList::allocate_root_chunk(VirtualSpaceNode** node) {
  if (!nodes_.empty()) {
    VirtualSpaceNode* last = nodes_.back().get();
    if (char* p = last->allocate_root_chunk()) {
      *node = last;
      return p;
    }
  }
  if (!expandable_) {
    fail(MS_ERR_CLASS_SPACE_FULL, "all %zu bytes of the class space are in use",
         geometry_.reserve_bytes);
    return nullptr;
  }
  auto fresh = VirtualSpaceNode::create(geometry_, 0, limiter_, &committed_, &bookkeeping_);
  if (!fresh) {
    append_error(" for a non-class node (node_bytes)");
    return nullptr;
  }
  fresh->chunk_starts().set_header_base(chunk_header_base_);
  if (add_node(std::move(fresh)) != MS_OK) return nullptr;
  *node = nodes_.back().get();
  return (*node)->allocate_root_chunk();
}

void VirtualSpaceList::set_chunk_header_base(const char* header_base) {
  chunk_header_base_ = header_base;
  for (const auto& n : nodes_) n->chunk_starts().set_header_base(header_base);
}

ms_error_t VirtualSpaceList::remove_node(VirtualSpaceNode* node) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [node](const auto& n) { return n.get() == node; });
  if (it == nodes_.end()) return fail(MS_ERR_INVALID_ARGUMENT, "node %p is not in the list",
                                      (void*)node);
  // A failed munmap keeps the node, empty and listed, for the next purge to try again.
  if (ms_error_t err = node->unmap(); err != MS_OK) return err;
  retired_commit_calls_ += node->commit_calls();
  retired_uncommit_calls_ += node->uncommit_calls();
  if (node == fixed_) {
    fixed_ = nullptr;
    fixed_base_ = fixed_bytes_ = 0;
  } else if (node == sole_.load(std::memory_order_relaxed)) {
    sole_.store(nullptr, std::memory_order_release);
  } else {
    node_map_.remove(node->base(), node->reserved_bytes());
  }
  reserved_.fetch_sub(node->reserved_bytes(), std::memory_order_relaxed);
  nodes_.erase(it);
  return MS_OK;
}


size_t VirtualSpaceList::commit_calls() const {
  size_t total = retired_commit_calls_;
  for (const auto& n : nodes_) total += n->commit_calls();
  return total;
}

size_t VirtualSpaceList::uncommit_calls() const {
  size_t total = retired_uncommit_calls_;
  for (const auto& n : nodes_) total += n->uncommit_calls();
  return total;
}

size_t VirtualSpaceList::purge_bookkeeping() {
  size_t returned = 0;
  for (const auto& n : nodes_) returned += n->purge_bookkeeping();
  return returned;
}

bool VirtualSpaceList::verify() const {
  size_t reserved = 0;
  size_t committed = 0;
  size_t bookkeeping = node_map_.committed_bytes();
  if (!node_map_.verify()) return false;
  for (const auto& n : nodes_) {
    bookkeeping += n->bookkeeping_bytes();
    if (!n->verify()) return false;
    MS_VERIFY(node_containing(n->base()) == n.get() && node_containing(n->end() - 1) == n.get(),
              "node %p is not found by its addresses", (void*)n->base());
    reserved += n->reserved_bytes();
    committed += n->committed_bytes();
  }
  const VirtualSpaceNode* sole = sole_.load(std::memory_order_relaxed);
  MS_VERIFY(sole == nullptr || (nodes_.size() == 1 && nodes_[0].get() == sole),
            "sole node %p with %zu nodes listed", (const void*)sole, nodes_.size());
  MS_VERIFY(!expandable_ || (node_map_.entries() * geometry_.root_chunk_bytes +
                             (sole != nullptr ? sole->reserved_bytes() : 0)) == reserved,
            "node map has %zu areas for %zu reserved bytes", node_map_.entries(), reserved);
  MS_VERIFY(expandable_ || (nodes_.size() == 1 && nodes_[0].get() == fixed_),
            "a fixed list of %zu nodes", nodes_.size());
  MS_VERIFY(reserved == reserved_bytes(), "reserved counter %zu, nodes %zu", reserved_bytes(),
            reserved);
  MS_VERIFY(committed == committed_bytes(), "committed counter %zu, nodes %zu",
            committed_bytes(), committed);
  MS_VERIFY(bookkeeping == bookkeeping_bytes(), "bookkeeping counter %zu, nodes and map %zu",
            bookkeeping_bytes(), bookkeeping);
  return true;
}

}  // namespace metaspace
