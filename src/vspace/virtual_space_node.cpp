#include "vspace/virtual_space_node.hpp"

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/os_memory.hpp"

namespace metaspace {

std::unique_ptr<VirtualSpaceNode> VirtualSpaceNode::create(
    const NodeGeometry& geometry, uintptr_t wish, CommitLimiter& limiter,
    std::atomic<size_t>* space_committed, std::atomic<size_t>* space_bookkeeping) {
  char* base = nullptr;
  if (os::reserve(geometry.reserve_bytes, geometry.root_chunk_bytes, wish, &base) != MS_OK) {
    return nullptr;
  }
  std::unique_ptr<VirtualSpaceNode> node(
      new VirtualSpaceNode(geometry, base, limiter, space_committed));
  if (node->init_bookkeeping(space_bookkeeping) != MS_OK) {
    return nullptr;  // the destructor releases the range
  }
  return node;
}

VirtualSpaceNode::VirtualSpaceNode(const NodeGeometry& geometry, char* base,
                                   CommitLimiter& limiter, std::atomic<size_t>* space_committed)
    : geometry_(geometry),
      base_(base),
      top_(base),
      limiter_(limiter),
      space_committed_(space_committed) {}

ms_error_t VirtualSpaceNode::init_bookkeeping(std::atomic<size_t>* space_bookkeeping) {
  ms_error_t err = bookkeeping_.init({.range_bytes = geometry_.reserve_bytes,
                                      .granule_bytes = geometry_.granule_bytes,
                                      .root_bytes = geometry_.root_chunk_bytes,
                                      .unit_bytes = geometry_.min_chunk_bytes},
                                     space_bookkeeping != nullptr ? space_bookkeeping
                                                                  : &own_bookkeeping_);
  if (err != MS_OK) return err;
  mask_ = CommitMask(base_, geometry_.reserve_bytes, geometry_.granule_bytes,
                     bookkeeping_.mask_words());
  area_open_ = bookkeeping_.area_flags();
  chunk_starts_.init(base_, geometry_.reserve_bytes, geometry_.min_chunk_bytes,
                     geometry_.root_chunk_bytes, bookkeeping_.slots(),
                     bookkeeping_.table_page_states(), bookkeeping_.root_slots(), &bookkeeping_,
                     {.return_at_once = geometry_.return_bookkeeping_at_once,
                      .order = geometry_.slot_order});
  return MS_OK;
}

VirtualSpaceNode::~VirtualSpaceNode() {
  limiter_.release(mask_.committed_bytes());
  if (space_committed_ != nullptr) {
    space_committed_->fetch_sub(mask_.committed_bytes(), std::memory_order_relaxed);
  }
  // Whatever the caller is failing with (a node that could not be set up is destroyed on the
  // way out) stays its error: a refused munmap here is nobody's news.
  KeepLastError keep;
  if (!unmapped_ && os::release(base_, geometry_.reserve_bytes) != MS_OK) {
    // Nobody is left to retry: the address space leaks, the memory must not.
    (void)os::uncommit(base_, geometry_.reserve_bytes, os::Uncommitted::kReadsZeros);
  }
}

ms_error_t VirtualSpaceNode::unmap() {
  MS_ASSERT(!unmapped_, "node %p unmapped twice", (void*)base_);
  ms_error_t err = os::release(base_, geometry_.reserve_bytes);
  if (err == MS_OK) unmapped_ = true;
  return err;
}

char* VirtualSpaceNode::allocate_root_chunk() {
  if (top_ == end()) return nullptr;
  char* p = top_;
  top_ += geometry_.root_chunk_bytes;
  return p;
}

ms_error_t VirtualSpaceNode::commit_run(size_t first, size_t last) {
  size_t bytes = (last - first) * geometry_.granule_bytes;
  char* p = base_ + first * geometry_.granule_bytes;
  if (!limiter_.try_charge(bytes)) {
    return fail(MS_ERR_LIMIT, "committing %zu more bytes would exceed the cap of %zu bytes "
                "(%zu committed)", bytes, limiter_.cap_bytes(), limiter_.committed_bytes());
  }
  ms_error_t err;
  if (geometry_.protect_uncommitted) {
    commit_calls_++;
    err = os::commit(p, bytes);
  } else {
    err = open_areas(p, bytes);
  }
  if (err != MS_OK) {
    limiter_.release(bytes);
    return err;
  }
  // The mask words about to change: their header page(s) are counted from now on.
  bookkeeping_.touch(&bookkeeping_.mask_words()[first / 64],
                     ((last - 1) / 64 - first / 64 + 1) * sizeof(uint64_t));
  mask_.mark_committed(p, bytes);
  if (space_committed_ != nullptr) space_committed_->fetch_add(bytes, std::memory_order_relaxed);
  return MS_OK;
}

ms_error_t VirtualSpaceNode::open_areas(char* p, size_t bytes) {
  size_t first = static_cast<size_t>(p - base_) / geometry_.root_chunk_bytes;
  size_t last = static_cast<size_t>(p + bytes - 1 - base_) / geometry_.root_chunk_bytes;
  for (size_t a = first; a <= last; a++) {
    if (area_open_[a] != 0) continue;
    commit_calls_++;
    ms_error_t err = os::commit(base_ + a * geometry_.root_chunk_bytes, geometry_.root_chunk_bytes);
    if (err != MS_OK) return err;
    bookkeeping_.touch(&area_open_[a], 1);
    area_open_[a] = 1;
  }
  return MS_OK;
}

ms_error_t VirtualSpaceNode::ensure_committed(char* p, size_t bytes) {
  if (bytes == 0) return MS_OK;
  size_t first = mask_.granule_index(p);
  size_t last = mask_.granule_index(p + bytes - 1) + 1;
  // Commit maximal runs of uncommitted granules: one kernel call per run.
  size_t g = first;
  while (g < last) {
    if (mask_.bit(g)) {
      g++;
      continue;
    }
    size_t run_end = g;
    while (run_end < last && !mask_.bit(run_end)) run_end++;
    ms_error_t err = commit_run(g, run_end);
    if (err != MS_OK) return err;
    g = run_end;
  }
  return MS_OK;
}

ms_error_t VirtualSpaceNode::uncommit(char* p, size_t bytes) {
  size_t first = mask_.granule_index(p);
  size_t last = first + bytes / geometry_.granule_bytes;
  size_t g = first;
  while (g < last) {
    if (!mask_.bit(g)) {
      g++;
      continue;
    }
    size_t run_end = g;
    while (run_end < last && mask_.bit(run_end)) run_end++;
    char* run = base_ + g * geometry_.granule_bytes;
    size_t run_bytes = (run_end - g) * geometry_.granule_bytes;
    uncommit_calls_++;
    ms_error_t err = os::uncommit(run, run_bytes,
                                  geometry_.protect_uncommitted ? os::Uncommitted::kFaults
                                                                : os::Uncommitted::kReadsZeros);
    // The run stays committed in the mask and the limiter: memory that could not be given back
    // is still counted, and the next uncommit of the range tries again. Runs before it are
    // uncommitted already; the caller re-reads the mask (ChunkManager::uncommit_locked).
    if (err != MS_OK) return err;
    mask_.mark_uncommitted(run, run_bytes);
    limiter_.release(run_bytes);
    if (space_committed_ != nullptr) {
      space_committed_->fetch_sub(run_bytes, std::memory_order_relaxed);
    }
    g = run_end;
  }
  return MS_OK;
}

bool VirtualSpaceNode::verify() const {
  MS_VERIFY(is_aligned(base_, geometry_.root_chunk_bytes), "node base %p", (void*)base_);
  MS_VERIFY(top_ >= base_ && top_ <= end(), "carving top %p outside node", (void*)top_);
  MS_VERIFY(mask_.verify(), "commit mask count disagrees with its bits");
  MS_VERIFY(chunk_starts_.verify(), "chunk start table of node %p", (void*)base_);
  // Nothing beyond the carved part may be committed: no chunk can own it.
  size_t carved_granules = mask_.granule_index(top_);
  for (size_t g = carved_granules; g < mask_.granules(); g++) {
    MS_VERIFY(!mask_.bit(g), "granule %zu committed beyond the carved area", g);
  }
  return true;
}

}  // namespace metaspace
