// Where a space's overhead lies, as rows for the reports: the node ranges, the loader objects,
// the loaders' arenas inside their first chunks, and the space's slab pages by size class, each
// class named after the structures whose size it serves; then the pages of objects above the
// largest class and the empty pages kept until the next purge. The rows add up to the space's
// overhead_bytes (both come from one BookkeepingUsage).
//
// Why: footprint/live on the lab's real traces is above the 1.05 goal largely because of
// bookkeeping (docs/placement-bound.md: 0.027 of interleave's live, 0.016 of ml-10-20-60's), and
// which structure holds how many pages decides what to shrink.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "instance/metaspace.hpp"

namespace metaspace {

struct OverheadRow {
  std::string what;     // "node ranges", "chunk headers (64 B)", ...
  size_t bytes = 0;     // committed bytes the row holds
  size_t objects = 0;   // objects in it (slab classes and loader objects), else 0
  size_t pages = 0;     // pages (slab classes, large objects, empty pages, loader objects)
};

// Rows with bytes > 0, in a fixed order.
std::vector<OverheadRow> overhead_rows(const BookkeepingUsage& usage);

}  // namespace metaspace
