// The human-readable metaspace report, in the spirit of `jcmd <pid> VM.metaspace`: total usage,
// virtual space, chunk freelists, the waste breakdown, settings, and optionally the usage per
// loader kind and per loader. Everything comes from one snapshot, so the numbers add up:
//   committed = used + free + waste, free = free in chunks in use + free chunks (committed),
//   waste = free blocks (deallocated + salvaged + alignment gaps) + fences; salvaged includes the
//   retired chunks' tails left in place (Arena::kSmallestTailWorthFiling), which are no blocks.
#pragma once

#include <metaspace/types.h>

#include <cstdint>
#include <cstdio>

#include "instance/metaspace.hpp"

namespace metaspace {

// One snapshot and the configuration it was taken under.
struct ReportInput {
  const Snapshot& snapshot;
  const ms_settings_t& settings;
  uintptr_t class_space_base;
  size_t class_space_bytes;
  unsigned class_shift;
  unsigned narrow_class_bits;
  size_t gc_threshold_bytes;  // current: ms_set_gc_threshold may have changed the setting
  // The class-data archive asked for (null: none) and why it is not mapped (MS_OK: it is).
  const char* archive_path = nullptr;
  ms_error_t archive_error = MS_OK;
  const char* archive_reason = "";
};

// What NULL options mean: dynamic scale, per-kind table and per-level freelists, no per-loader
// table (it can be long).
ms_report_options_t default_report_options();

// Committed memory ready to be handed out: the rest of chunks in use, and free chunks.
inline size_t free_bytes(const ms_space_stats_t& s) {
  return s.free_in_chunks_bytes + s.free_chunks_bytes;
}
// Committed memory that holds neither live blocks nor memory ready for any request.
inline size_t waste_bytes(const ms_space_stats_t& s) { return s.free_blocks_bytes + s.fence_bytes; }

// `options.scale` must be valid (Scale::valid).
void print_report(FILE* out, const ReportInput& in, const ms_report_options_t& options);

}  // namespace metaspace
