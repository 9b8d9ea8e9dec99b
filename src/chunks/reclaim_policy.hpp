// What the chunk manager does with free chunks. The three policies of JEP 387, as switches.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

#include "common/units.hpp"

namespace metaspace {

struct ReclaimPolicy {
  ms_reclaim_t kind;
  bool merge;                // buddies are merged when chunks come back, and may be enlarged into
  bool uncommit_on_return;   // free chunks are uncommitted at once, not only in purge()
  bool uncommit_in_purge;
  bool commit_whole_chunks;  // a chunk is fully committed when handed out (pre-elastic)

  static ReclaimPolicy of(ms_reclaim_t kind) {
    switch (kind) {
      case MS_RECLAIM_NONE: return {kind, false, false, false, true};
      case MS_RECLAIM_AGGRESSIVE: return {kind, true, true, true, false};
      case MS_RECLAIM_BALANCED: break;
    }
    return {MS_RECLAIM_BALANCED, true, false, true, false};
  }

  // Granule size when the settings leave it open. Balanced uses 16 KiB rather than HotSpot's
  // 64 KiB: with interleaved loaders, small chunks of live and dead loaders share granules and
  // pin them (shared/reference/design-findings.md; measured by the lab, see BENCHMARKS.md).
  // Uncommitting with madvise keeps the mapping count flat at any granule size.
  size_t default_granule_bytes() const {
    switch (kind) {
      case MS_RECLAIM_NONE: return 64 * KiB;
      case MS_RECLAIM_AGGRESSIVE: return 4 * KiB;
      case MS_RECLAIM_BALANCED: break;
    }
    return 16 * KiB;
  }
};

const char* reclaim_name(ms_reclaim_t kind);

}  // namespace metaspace
