#include "stats/kind_stats.hpp"

namespace metaspace {

std::array<KindStats, MS_LOADER_KIND_COUNT> stats_by_kind(const std::vector<LoaderStats>& loaders) {
  std::array<KindStats, MS_LOADER_KIND_COUNT> kinds{};
  for (const LoaderStats& l : loaders) {
    KindStats& k = kinds[l.kind];
    k.loaders++;
    k.allocations += l.allocations;
    for (int s = 0; s < 2; s++) {
      k.used_bytes[s] += l.used_bytes[s];
      k.committed_bytes[s] += l.arena[s].committed_bytes;
      k.capacity_bytes[s] += l.arena[s].capacity_bytes;
      k.free_blocks_bytes[s] += l.free_blocks_bytes[s];
      k.chunks[s] += l.arena[s].chunks;
    }
  }
  return kinds;
}

const char* loader_kind_name(ms_loader_kind_t kind) {
  switch (kind) {
    case MS_LOADER_BOOT: return "boot";
    case MS_LOADER_STANDARD: return "standard";
    case MS_LOADER_MICRO: return "micro";
  }
  return "?";
}

}  // namespace metaspace
