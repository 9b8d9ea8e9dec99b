// Layer 3: one reserved region of address space, carved into root chunk areas from the bottom.
//
// The node offers committing and uncommitting as a service, granule by granule, through its
// commit mask and the global limiter; it knows nothing of chunks. The base is aligned to the root
// chunk size, so every root chunk area is aligned to its size, which buddy arithmetic relies on.
//
// Protection and memory have different units. Memory is committed and returned per granule:
// the mask and the limiter account it, and uncommit hands the pages back with madvise. Access
// rights change per root chunk area: the first commit in an area makes the whole area read-write,
// once. Making each granule read-write on its own would leave read-write islands between
// PROT_NONE gaps, one kernel mapping each, against a default limit of 65 530 per process (200
// interleaved loaders at 16 KiB granules need 839); per area the
// node stays one mapping whatever the granule. Read-write pages that were never touched or were
// given back cost no memory. Checked mode protects per granule instead, so that touching
// uncommitted memory faults, and pays in mappings.
#pragma once

#include <metaspace/types.h>

#include <atomic>
#include <cstddef>
#include <memory>

#include "commit/commit_limiter.hpp"
#include "commit/commit_mask.hpp"
#include "vspace/chunk_start_table.hpp"
#include "vspace/node_bookkeeping.hpp"

namespace metaspace {

struct NodeGeometry {
  size_t reserve_bytes;     // multiple of root_chunk_bytes
  size_t root_chunk_bytes;  // power of 2
  size_t granule_bytes;     // power of 2, page size .. root_chunk_bytes
  bool protect_uncommitted; // checked mode: uncommitted memory faults on access
  size_t min_chunk_bytes = 1024;  // slot size of the chunk start table (the smallest chunk)
  // Pages of the chunk start table go back as soon as they empty (the aggressive policy), not
  // at the next purge.
  bool return_bookkeeping_at_once = false;
  // How the chunk start table orders an area's slots (ChunkStartTable::SlotOrder).
  ChunkStartTable::SlotOrder slot_order = ChunkStartTable::SlotOrder::kHeadFirst;
};

class VirtualSpaceNode {
 public:
  // Reserves the region (at `wish` if non-zero) and returns the node, or null with the error set.
  // `space_committed`, if given, follows the node's committed bytes (the list's O(1) total);
  // `space_bookkeeping` follows the bytes of the node's own bookkeeping range in use (commit
  // mask, area flags, chunk start table pages: see NodeBookkeeping), if given.
  static std::unique_ptr<VirtualSpaceNode> create(
      const NodeGeometry& geometry, uintptr_t wish, CommitLimiter& limiter,
      std::atomic<size_t>* space_committed = nullptr,
      std::atomic<size_t>* space_bookkeeping = nullptr);
  ~VirtualSpaceNode();
  VirtualSpaceNode(const VirtualSpaceNode&) = delete;
  VirtualSpaceNode& operator=(const VirtualSpaceNode&) = delete;

  char* base() const { return base_; }
  char* end() const { return base_ + geometry_.reserve_bytes; }
  size_t reserved_bytes() const { return geometry_.reserve_bytes; }
  bool contains(const void* p) const { return p >= base_ && p < end(); }

  // Next uncarved root chunk area, or null when the node is full. Nothing is committed.
  char* allocate_root_chunk();
  size_t root_chunks_carved() const {
    return static_cast<size_t>(top_ - base_) / geometry_.root_chunk_bytes;
  }
  size_t root_chunks_capacity() const {
    return geometry_.reserve_bytes / geometry_.root_chunk_bytes;
  }

  // Commits every granule that overlaps [p, p + bytes) and is not committed yet.
  // On failure (cap reached, kernel refused) the granules committed before it stay committed.
  ms_error_t ensure_committed(char* p, size_t bytes);
  // Uncommits the committed granules of a granule-aligned range. On failure some runs may be
  // uncommitted and the rest not; the mask says which (callers re-read it).
  ms_error_t uncommit(char* p, size_t bytes);
  // Gives the reservation back before destruction (what was committed is uncharged by the
  // destructor). On failure the node stays intact and may be unmapped later; the destructor
  // unmaps whatever is left.
  ms_error_t unmap();

  const CommitMask& mask() const { return mask_; }
  // Which chunk starts where (kept by the chunk layer): O(1) address → chunk.
  ChunkStartTable& chunk_starts() { return chunk_starts_; }
  const ChunkStartTable& chunk_starts() const { return chunk_starts_; }
  size_t committed_bytes() const { return mask_.committed_bytes(); }
  // Returns the node's empty bookkeeping pages (chunk start table); the bytes given back.
  size_t purge_bookkeeping() { return chunk_starts_.purge(); }
  // The node's own bookkeeping held now (header + chunk start pages in use): overhead.
  size_t bookkeeping_bytes() const {
    return bookkeeping_.header_bytes() + chunk_starts_.committed_bytes();
  }
  // Kernel calls made so far to change access rights or return memory.
  size_t commit_calls() const { return commit_calls_; }
  size_t uncommit_calls() const { return uncommit_calls_; }

  bool verify() const;

 private:
  VirtualSpaceNode(const NodeGeometry& geometry, char* base, CommitLimiter& limiter,
                   std::atomic<size_t>* space_committed);
  // The node's own bookkeeping range; the mask and the table point into it.
  ms_error_t init_bookkeeping(std::atomic<size_t>* space_bookkeeping);
  ms_error_t commit_run(size_t first, size_t last);
  // Makes the root chunk areas overlapping [p, p + bytes) read-write if they are not yet.
  ms_error_t open_areas(char* p, size_t bytes);

  const NodeGeometry geometry_;
  char* const base_;
  char* top_;
  std::atomic<size_t> own_bookkeeping_{0};  // the counter when the caller gives none
  // Declared before what lives in it: destroyed after them.
  NodeBookkeeping bookkeeping_;
  CommitMask mask_;
  CommitLimiter& limiter_;
  uint8_t* area_open_ = nullptr;  // per root chunk area: made read-write (in bookkeeping_)
  std::atomic<size_t>* const space_committed_;
  ChunkStartTable chunk_starts_;
  size_t commit_calls_ = 0;
  size_t uncommit_calls_ = 0;
  bool unmapped_ = false;
};

}  // namespace metaspace
