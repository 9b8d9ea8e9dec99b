#include "vspace/virtual_space_list.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "common/verify.hpp"

namespace metaspace {

VirtualSpaceList::VirtualSpaceList(const NodeGeometry& geometry, CommitLimiter& limiter,
                                   bool expandable, uintptr_t wish)
    : geometry_(geometry), limiter_(limiter), expandable_(expandable) {
  if (!expandable) {
    auto node = VirtualSpaceNode::create(geometry, wish, limiter);
    if (node) nodes_.push_back(std::move(node));
  }
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
  auto fresh = VirtualSpaceNode::create(geometry_, 0, limiter_);
  if (!fresh) return nullptr;
  nodes_.push_back(std::move(fresh));
  *node = nodes_.back().get();
  return (*node)->allocate_root_chunk();
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
  nodes_.erase(it);
  return MS_OK;
}

VirtualSpaceNode* VirtualSpaceList::node_containing(const void* p) const {
  for (const auto& n : nodes_) {
    if (n->contains(p)) return n.get();
  }
  return nullptr;
}

size_t VirtualSpaceList::reserved_bytes() const {
  size_t total = 0;
  for (const auto& n : nodes_) total += n->reserved_bytes();
  return total;
}

size_t VirtualSpaceList::committed_bytes() const {
  size_t total = 0;
  for (const auto& n : nodes_) total += n->committed_bytes();
  return total;
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

size_t VirtualSpaceList::bookkeeping_bytes() const {
  size_t total = 0;
  for (const auto& n : nodes_) total += sizeof(VirtualSpaceNode) + n->mask().granules() / 8;
  return total;
}

bool VirtualSpaceList::verify() const {
  for (const auto& n : nodes_) {
    if (!n->verify()) return false;
  }
  return true;
}

}  // namespace metaspace
