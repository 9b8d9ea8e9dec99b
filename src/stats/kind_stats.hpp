// Loader statistics summed per loader kind: the "by space type" view of jcmd VM.metaspace, which
// tells whether memory goes to a few big loaders or to many micro ones.
#pragma once

#include <metaspace/types.h>

#include <array>
#include <cstdint>
#include <vector>

#include "loader/loader_metaspace.hpp"

namespace metaspace {

struct KindStats {
  size_t loaders = 0;
  uint64_t allocations = 0;
  size_t used_bytes[2] = {};       // by where the memory lies, as LoaderStats
  size_t committed_bytes[2] = {};  // within the loaders' chunks
  size_t capacity_bytes[2] = {};
  size_t free_blocks_bytes[2] = {};
  size_t chunks[2] = {};
};

std::array<KindStats, MS_LOADER_KIND_COUNT> stats_by_kind(const std::vector<LoaderStats>& loaders);
const char* loader_kind_name(ms_loader_kind_t kind);

}  // namespace metaspace
