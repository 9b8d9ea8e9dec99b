// What the chunk manager does with free chunks. The three policies of JEP 387, as switches.
#pragma once

#include <metaspace/types.h>

#include <cstddef>

#include "common/units.hpp"

namespace metaspace {

struct ReclaimPolicy {
  // Every policy names every switch (see of()); there are no defaults to fall back on.
  ms_reclaim_t kind;
  bool merge;                // buddies are merged when chunks come back, and may be enlarged into
  bool uncommit_on_return;   // free chunks are uncommitted at once, not only in purge()
  bool uncommit_in_purge;    // purge() uncommits free chunks that span whole granules
  bool commit_whole_chunks;  // a chunk is fully committed when handed out (pre-elastic)

  static ReclaimPolicy of(ms_reclaim_t kind) {
    switch (kind) {
      case MS_RECLAIM_NONE:
        return {.kind = kind,
                .merge = false,
                .uncommit_on_return = false,
                .uncommit_in_purge = false,
                .commit_whole_chunks = true};
      case MS_RECLAIM_AGGRESSIVE:
        return {.kind = kind,
                .merge = true,
                .uncommit_on_return = true,
                .uncommit_in_purge = true,
                .commit_whole_chunks = false};
      case MS_RECLAIM_BALANCED: break;
    }
    return {.kind = MS_RECLAIM_BALANCED,
            .merge = true,
            .uncommit_on_return = false,
            .uncommit_in_purge = true,
            .commit_whole_chunks = false};
  }

  // Granule size when the settings leave it open (raised to the page size where pages are
  // larger). Balanced uses 4 KiB rather than HotSpot's 64 KiB: with interleaved loaders, small
  // chunks of live and dead loaders share granules and pin them: with 200 interleaved loaders
  // of which 4/5 are unloaded, committed/used is 1.01 at 4 KiB against 1.45 at 64 KiB, with the
  // same mappings (the node opens access per root chunk area); only uncommit calls grow
  // (bench/analysis.md, "Moved from code comments").
  size_t default_granule_bytes() const {
    return kind == MS_RECLAIM_NONE ? 64 * KiB : 4 * KiB;
  }
};

const char* reclaim_name(ms_reclaim_t kind);

}  // namespace metaspace
