// Building blocks shared by the unit tests of the bottom layers: a reserved range that is released
// on scope exit, a fault-injection guard that disarms on scope exit (the seam is process-global,
// so an armed fault must never leak into the next test), and a private space (limiter, virtual
// space list, chunk manager) with explicit geometry.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstddef>

#include "chunks/chunk_manager.hpp"
#include "commit/commit_limiter.hpp"
#include "common/units.hpp"
#include "os/fault_injection.hpp"
#include "os/os_memory.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace::test {

class ReservedRange {
 public:
  ReservedRange(size_t bytes, size_t alignment) : bytes_(bytes) {
    EXPECT_EQ(os::reserve(bytes, alignment, 0, &base_), MS_OK) << ms_last_error_text();
  }
  ~ReservedRange() { os::release(base_, bytes_); }
  ReservedRange(const ReservedRange&) = delete;
  ReservedRange& operator=(const ReservedRange&) = delete;

  char* base() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  char* base_ = nullptr;
  size_t bytes_;
};

class FaultGuard {
 public:
  FaultGuard(os::FaultPoint point, uint64_t nth) : point_(point) { os::inject_fault(point, nth); }
  ~FaultGuard() { os::inject_fault(point_, 0); }
  FaultGuard(const FaultGuard&) = delete;
  FaultGuard& operator=(const FaultGuard&) = delete;

 private:
  os::FaultPoint point_;
};

struct SpaceConfig {
  ms_reclaim_t reclaim = MS_RECLAIM_BALANCED;
  size_t root_chunk_bytes = 4 * MiB;
  size_t node_bytes = 16 * MiB;
  size_t granule_bytes = 16 * KiB;
  size_t cap_bytes = 0;
  bool expandable = true;
  bool protect_uncommitted = false;
};

// One space as a Context builds it, but with every knob in the test's hands. The limiter is
// private to the space, so its count must always equal the space's committed bytes.
struct Space {
  explicit Space(const SpaceConfig& config)
      : bookkeeping({.reserve_bytes = 256 * MiB,
                     .return_at_once = ReclaimPolicy::of(config.reclaim).uncommit_on_return}),
        limiter(config.cap_bytes),
        vslist({.reserve_bytes = config.node_bytes,
                .root_chunk_bytes = config.root_chunk_bytes,
                .granule_bytes = config.granule_bytes,
                .protect_uncommitted = config.protect_uncommitted,
                .return_bookkeeping_at_once =
                    ReclaimPolicy::of(config.reclaim).uncommit_on_return},
               limiter, {.expandable = config.expandable}),
        chunks(vslist, ChunkGeometry(config.root_chunk_bytes), ReclaimPolicy::of(config.reclaim),
               bookkeeping) {}

  // Checks everything a step may have broken; use as EXPECT_TRUE(space.consistent()).
  ::testing::AssertionResult consistent() const {
    if (!chunks.verify()) return ::testing::AssertionFailure() << ms_last_error_text();
    if (limiter.committed_bytes() != vslist.committed_bytes()) {
      return ::testing::AssertionFailure() << "limiter counts " << limiter.committed_bytes()
                                           << " bytes, the nodes " << vslist.committed_bytes();
    }
    return ::testing::AssertionSuccess();
  }

  // Free chunks per level according to the manager's own statistics.
  size_t free_chunks(int level) const {
    std::lock_guard<std::mutex> guard(chunks.lock());
    return chunks.free_chunk_stats_locked()[static_cast<size_t>(level)].count;
  }
  size_t free_chunks() const {
    std::lock_guard<std::mutex> guard(chunks.lock());
    size_t n = 0;
    for (const auto& s : chunks.free_chunk_stats_locked()) n += s.count;
    return n;
  }
  size_t chunks_in_use() const {
    std::lock_guard<std::mutex> guard(chunks.lock());
    return chunks.chunks_in_use_locked();
  }
  size_t root_chunks_carved() const {
    size_t n = 0;
    for (const auto& node : vslist.nodes()) n += node->root_chunks_carved();
    return n;
  }

  SlabAllocator bookkeeping;  // chunk headers
  CommitLimiter limiter;
  VirtualSpaceList vslist;
  ChunkManager chunks;
};

}  // namespace metaspace::test
