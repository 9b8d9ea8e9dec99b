// The chunk manager of one space: hands out chunks from its free lists (splitting larger ones) or
// from fresh root chunk areas, takes them back (merging buddies), commits them on demand and
// uncommits free chunks according to the reclaim policy.
//
// Thread safety: every public function takes the manager's lock; it is the only lock on the
// allocation slow path below the arena, and never held while calling out of the library.
#pragma once

#include <metaspace/types.h>

#include <mutex>
#include <vector>

#include "chunks/chunk.hpp"
#include "chunks/chunk_header_pool.hpp"
#include "chunks/chunk_level.hpp"
#include "chunks/free_chunk_lists.hpp"
#include "chunks/reclaim_policy.hpp"
#include "slab/slab_allocator.hpp"
#include "chunks/space_usage.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {

struct FreeChunkLevelStats {
  size_t count = 0;
  size_t bytes = 0;
  size_t committed_bytes = 0;
};

class ChunkManager {
 public:
  // Chunk headers come from `bookkeeping` (the slabs of the space's context: in a metaspace, one
  // allocator for both spaces, ContextBookkeeping).
  ChunkManager(VirtualSpaceList& vslist, const ChunkGeometry& geometry, ReclaimPolicy policy,
               SlabAllocator& bookkeeping);
  ~ChunkManager();
  ChunkManager(const ChunkManager&) = delete;
  ChunkManager& operator=(const ChunkManager&) = delete;

  // A chunk of `preferred_level`, or smaller down to `max_level` (the smallest acceptable, ≥
  // preferred), with at least `min_committed_bytes` committed. Null with the error set.
  Chunk* get_chunk(int preferred_level, int max_level, size_t min_committed_bytes);
  // A chunk of exactly `level`, in use and with nothing committed whatever the policy commits on
  // hand-out (the pre-elastic one commits whole chunks): address space held back with no memory
  // behind it, such as the class space's guard at narrow 0. Returned with return_chunk like any
  // other. Null with the error set, and nothing held, if it cannot be had uncommitted.
  Chunk* get_uncommitted_chunk(int level);
  // Takes back a chunk handed out by get_chunk. A chunk that is not in use (returned twice)
  // is refused with MS_ERR_INVALID_ARGUMENT and nothing changes. A header that was recycled for
  // another chunk in between cannot be told apart from that chunk.
  ms_error_t return_chunk(Chunk* c);
  // Returns a whole list (linked through `next`) under one lock: an arena's death. All or
  // nothing: if one chunk is not in use, none is returned.
  ms_error_t return_chunks(Chunk* list);
  // Makes [c->base, c->base + bytes) committed (rounded up to granules); updates c. While
  // threads contend for this manager's lock, up to kContendedStepBytes ahead (see below).
  ms_error_t ensure_committed(Chunk* c, size_t bytes);
  // Doubles the in-use chunk c in place if its buddy is free.
  bool attempt_enlarge(Chunk* c);
  // Uncommits free chunks that span whole granules and unmaps nodes that became empty.
  void purge();

  // What the arenas of this space hand out (kept by them; see SpaceUsage).
  SpaceUsage& usage() { return usage_; }
  const SpaceUsage& usage() const { return usage_; }

  const ChunkGeometry& geometry() const { return geometry_; }
  const ReclaimPolicy& policy() const { return policy_; }
  size_t granule_bytes() const { return vslist_.geometry().granule_bytes; }
  VirtualSpaceList& vslist() { return vslist_; }
  SlabAllocator& bookkeeping() { return bookkeeping_; }

  // The in-use chunk whose memory holds p, or null if p is not in this space, not in a carved
  // area or in a free chunk. O(1) for every chunk of every node, and without the lock: a caller
  // that holds the chunk (its arena) gets a stable answer; for anyone else it is a hint to be
  // checked against Chunk::owner_is (see ChunkStartTable). The table records in-use chunks only,
  // so its nearest start below p may be a chunk that ends before p (p in a free chunk): the end
  // is checked here.
  Chunk* chunk_containing(const void* p) const {
    VirtualSpaceNode* node = vslist_.node_containing(p);
    if (node == nullptr) return nullptr;
    Chunk* c = node->chunk_starts().find(p);
    return c != nullptr && c->contains_unlocked(p) ? c : nullptr;
  }

  // For statistics and checks: committed bytes of a chunk according to the commit mask. The
  // caller holds lock() (a neighbour's commit writes the same mask words).
  size_t mask_committed_bytes(const Chunk* c) const;
  // The same, taking the lock: for checks from the layers above.
  size_t read_committed_bytes(const Chunk* c) const;
  std::mutex& lock() const { return lock_; }
  // Caller holds lock().
  std::vector<FreeChunkLevelStats> free_chunk_stats_locked() const;
  size_t chunks_in_use_locked() const {
    MS_ASSERT_LOCKED(lock_);
    return pool_.in_use() - free_lists_.count();
  }

  bool verify() const;
  bool verify_locked() const;

 private:
  struct RootArea {
    VirtualSpaceNode* node;
    Chunk* first;
  };

  // The node holding c: its address finds it in O(1) (the header does not name it: 8 bytes of
  // every chunk header, chunk.hpp).
  VirtualSpaceNode* node_of(const Chunk* c) const {
    VirtualSpaceNode* node = vslist_.node_containing(c->base);
    MS_ASSERT(node != nullptr, "chunk %p lies in no node", (void*)c->base);
    return node;
  }
  // Debug builds check the whole manager now and then (see the definition).
  void verify_sometimes_locked();
  // Debug builds: alive for a get or a return, under the lock. The manager is verified (now and
  // then) when the operation starts and when it ends, and so is the chunk handed out or taken
  // back.
  class VerifiedOperation {
   public:
    explicit VerifiedOperation(ChunkManager& m) : m_(m) { m_.verify_sometimes_locked(); }
    ~VerifiedOperation() { m_.verify_sometimes_locked(); }
    VerifiedOperation(const VerifiedOperation&) = delete;
    VerifiedOperation& operator=(const VerifiedOperation&) = delete;

   private:
    ChunkManager& m_;
  };
  // Headers promised, a free chunk (or a new root chunk) taken and split down to
  // `preferred_level`, marked in use; nothing committed yet.
  Chunk* take_chunk_locked(int preferred_level, int max_level, size_t min_committed_bytes);
  Chunk* take_free_chunk_locked(int preferred_level, int max_level, size_t min_committed_bytes);
  Chunk* new_root_chunk_locked();
  void return_chunk_locked(Chunk* c);
  ms_error_t ensure_committed_locked(Chunk* c, size_t bytes);
  // On a refusal part of the chunk may stay committed: c->committed_bytes is re-read.
  ms_error_t uncommit_locked(Chunk* c);
  // Re-derives c's committed prefix from the commit mask (a free chunk may have gained
  // committed memory through a neighbour sharing its granule).
  void refresh_committed_locked(Chunk* c) const;
  void remove_empty_nodes_locked();

  VirtualSpaceList& vslist_;
  const ChunkGeometry geometry_;
  const ReclaimPolicy policy_;
  mutable std::mutex lock_;
  // An arena grows its committed part one granule at a time, so that committed stays within a
  // granule of what it handed out; with 4 KiB granules that is one trip through lock_ per 4 KiB an
  // arena grows, and two threads growing their own loaders meet here every few microseconds
  // (bench/analysis.md, "Moved from code comments", has the profile). So an ensure_committed that
  // finds the lock taken makes the next kContendedSteps commits of this manager step
  // kContendedStepBytes ahead in chunks of at least kContendedStepMinChunkBytes: the loaders that
  // grow fast (a chunk that large comes after at least ~100 KiB of a loader's blocks), at most 12
  // KiB more committed per such chunk, and only while threads actually meet here. Chunks below that
  // size would pay up to 3/4 of themselves for it. 4 096 steps on chunks of 64 KiB and more
  // cut the threads run's commit calls to 28 000 (from 99 000 without stepping). A process whose
  // threads never meet here (one thread: the lab's replays, the fault sweep) commits one granule at
  // a time.
  static constexpr size_t kContendedStepBytes = 16 * KiB;
  static constexpr size_t kContendedStepMinChunkBytes = 64 * KiB;
  static constexpr size_t kContendedSteps = 4096;
  size_t contended_steps_left_ = 0;  // under lock_
  size_t operations_since_verify_ = 0;  // debug builds: see verify_sometimes_locked
  SlabAllocator& bookkeeping_;
  ChunkHeaderPool pool_;
  FreeChunkLists free_lists_;
  std::vector<RootArea> areas_;
  SpaceUsage usage_;
};

}  // namespace metaspace
