// The accounting identity every test checks against the statistics: per space and in total,
//   committed = used + free in chunks + free chunks + free blocks + fences + overhead.
// One sum for every test, so that a new component is added in one place.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

namespace metaspace::test {

inline size_t accounted_bytes(const ms_space_stats_t& sp) {
  return sp.used_bytes + sp.free_in_chunks_bytes + sp.free_chunks_bytes + sp.free_blocks_bytes +
         sp.fence_bytes + sp.overhead_bytes;
}

}  // namespace metaspace::test
