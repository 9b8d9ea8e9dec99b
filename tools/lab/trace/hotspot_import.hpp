#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "trace/trace_writer.hpp"

namespace lab {

// A log line the importer knows but cannot parse; the message is "file:line: expected ..., got ...".
class HotSpotLogError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The two forms of HotSpot's elastic-metaspace trace log (docs/hotspot-log.md). JDK 16-21 name the
// arenas "(non-class sm)" and log an allocation's size and address on separate lines; JDK 22-25
// name them "(non-class arena)" and log both on one "returning block" line. Older JDKs (11-15) log
// no allocation at all.
enum class Dialect { unknown, jdk16_21, jdk22_25 };
const char* dialect_name(Dialect d);

// What an import saw, counted as the log shows it (docs/trace-format.md, "Import from HotSpot").
struct ImportCounts {
  std::uint64_t lines = 0;
  std::uint64_t unknown_lines = 0;       // skipped: not a metaspace line the importer knows
  std::uint64_t loaders = 0;             // CLMS born
  std::uint64_t boot_loaders = 0;
  std::uint64_t micro_loaders = 0;
  std::uint64_t deaths = 0;              // CLMS dies
  std::uint64_t allocations = 0;         // "returning block" (outer lines only)
  std::uint64_t class_allocations = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t frees = 0;               // "added to fbl" of a live allocation's start
  std::uint64_t freed_bytes = 0;
  std::uint64_t cross_arena_frees = 0;   // received by another loader's arena than the allocating one
  std::uint64_t wastage_blocks = 0;      // "added to fbl" of HotSpot's own wastage (not a free)
  std::uint64_t unannounced_wastage = 0; // of those, not announced by a "wastage block" just before
  std::uint64_t gcs = 0;                 // "GC(n) Metaspace: a(b)->c(d)" summaries
  std::uint64_t markers = 0;
  std::uint64_t hotspot_committed_bytes = 0;  // at the end, rebuilt from the commit lines
  std::uint64_t hotspot_used_bytes = 0;       // at the end, rebuilt from the allocation lines
  std::uint64_t live_bytes = 0;               // at the end: allocated, not freed, loader alive
  Dialect dialect = Dialect::unknown;         // of the arena lines

  nlohmann::json to_json() const;
};

struct ImportOptions {
  // Text HotSpot printed at exit with -XX:+PrintMetaspaceStatisticsAtExit (e.g. the -XX:LogFile
  // of `record`); empty: none. Its "Both:" figures go into the final marker as reported_*.
  std::string exit_statistics_path;
};

// Converts a JDK 16-25 `-Xlog:metaspace*=trace` log (either dialect, told apart by its arena lines) (plain or gzip) into a trace, streaming: memory
// grows with the live allocations, not with the log. Throws HotSpotLogError for a malformed known
// line or an impossible sequence (an allocation in an arena never born: the head of a rotated log).
ImportCounts import_hotspot_log(const std::string& log_path, TraceWriter& out, const ImportOptions& options = {});

}  // namespace lab
