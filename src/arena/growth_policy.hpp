// Which chunk size an arena asks for next, by loader kind and space. The sequence is walked one
// step per chunk taken and its last entry repeats.
//
// Standard loaders keep doubling up to 256 KiB (HotSpot 25 stops at 16 KiB): busy loaders then own
// whole commit granules, so their memory can be uncommitted when they die instead of staying
// pinned by neighbours' live chunks in shared granules (docs/hotspot-measured.md, the replay
// model's "chunks keep doubling" design). Commit on demand means the untouched tail of a big
// chunk costs nothing.
// Standard loaders take their first Klasses from the micro pool too (src/loader/loader_metaspace.hpp):
// their class sequence starts when those outgrow it. Their non-class sequence starts at 8 KiB and
// doubles. Not below a granule: two loaders' 2 KiB chunks sharing a granule pin it until both have
// died (at 2 KiB the interleave trace's footprint/live is 1.176 instead of 1.103). Two granules
// rather than one, because a chunk's untouched granules cost nothing while every chunk costs a
// header, a start slot and the unused end it is retired with: a loader of 18 KiB (a URLClassLoader
// of six classes) takes 2 chunks instead of 4, and where 3 of 4 such loaders die the survivors'
// headers hold fewer slab pages (bench/analysis.md, "Class-loading churn").
// Micro loaders take their blocks from the micro pool (src/loader/micro_pool.hpp); these sizes
// apply only once one graduates: a micro loader that outgrew the pool (a block over 1 KiB, over
// 8 KiB in all). Their first chunk is 1 KiB, below a granule, as a hidden class has 960–2 560
// non-class bytes and smaller chunks leave less unused. Then they double (to 64 KiB non-class,
// 16 KiB class): a graduated micro loader is a big one, and 1 KiB chunks forever would cost it a
// chunk header and a chunk start per KiB, and start slots on pages of their own (sub-4 KiB
// chunks beyond an area's head of slots). bench/analysis.md ("Moved from code comments") has
// the replays that chose these sizes.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <array>
#include <cstdint>
#include <vector>

#include "chunks/chunk_level.hpp"
#include "common/assert.hpp"

namespace metaspace {

class GrowthPolicy {
 public:
  // Sizes in bytes, each a power of 2 ≥ 1 KiB; sizes above the root chunk are clamped to it.
  GrowthPolicy(const std::vector<size_t>& sequence_bytes, const ChunkGeometry& geometry);

  static GrowthPolicy for_loader(ms_loader_kind_t kind, ms_space_t space,
                                 const ChunkGeometry& geometry);
  static const std::vector<size_t>& default_sequence(ms_loader_kind_t kind, ms_space_t space);

  int level_at(size_t chunk_index) const {
    MS_ASSERT(steps_ > 0, "empty growth sequence");
    return levels_[chunk_index < steps_ ? chunk_index : steps_ - 1];
  }
  size_t steps() const { return steps_; }

  static constexpr size_t kMaxSteps = 16;

 private:
  // Inline, not a vector: every loader creates two policies, and a heap allocation each was
  // most of the cost of creating a loader.
  std::array<int8_t, kMaxSteps> levels_{};
  size_t steps_ = 0;
};

}  // namespace metaspace
