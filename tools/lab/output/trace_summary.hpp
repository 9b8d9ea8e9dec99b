#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_result.hpp"
#include "trace/placement_floor.hpp"

namespace lab {

// One row of the many-traces summary (`compare replay A B ... | DIR`): how one backend did on one
// trace, beside what HotSpot itself did on it. Ratios over the samples whose live is at least 1 %
// of the trace's peak live (as the verdicts); NaN where there is none.
struct TraceSummaryRow {
  std::string trace;
  std::string backend;
  double max_footprint_live = 0;
  double median_footprint_live = 0;
  double at_hotspot_worst = 0;  // this backend's footprint/live where HotSpot's committed/live is highest
  // max_footprint_live split at its sample: committed memory (chunks, or the malloc's own figure)
  // over live, and the library's bookkeeping over live (footprint − committed; 0 for mallocs).
  double committed_at_max = 0;
  double overhead_at_max = 0;
  std::size_t peak_rss = 0;
  std::size_t valley_rss = 0;  // the lowest RSS after the peak
  std::size_t peak_live = 0;   // of the trace; below kTooSmallToJudgeBytes the goal is not judged
  std::string error;
};

struct TraceHotSpot {
  std::string trace;
  double max_own = 0;     // HotSpot committed/used, its own ratio
  double median_own = 0;
  double max_live = 0;    // HotSpot committed / the trace's live
  std::size_t points = 0;
};

// The least footprint/live an allocator that keeps blocks in place and cannot foresee deaths can
// expect on the trace, at its worst point (trace/placement_floor.hpp, docs/placement-bound.md):
// where elastic misses the goal, what part of the miss any such allocator would share.
struct TraceFloor {
  std::string trace;
  PlacementFloor::Point worst;
};

struct TraceSummary {
  std::vector<TraceSummaryRow> rows;
  std::vector<TraceHotSpot> hotspot;
  std::vector<TraceFloor> floors;

  void add(const std::string& trace, const RunResult& result);
  void add_floor(const std::string& trace, const PlacementFloor::Point& worst);
  const TraceFloor* floor_of(const std::string& trace) const;
  std::string format() const;
  // The same in Markdown (summary.md, to paste into a note): the worst footprint/live as a matrix
  // of trace x backend with HotSpot's two ratios, then every figure per trace and backend.
  std::string markdown() const;
  // One line: the traces on which elastic's worst footprint/live is above the 1.05 goal, each
  // with its placement floor, or that it is met on all ("" without elastic rows); traces too small
  // to judge (verdict.hpp) are named apart, never counted as above the goal.
  std::string goal_line() const;
  nlohmann::json to_json() const;
};

// The traces named: files as given, directories expanded to their *.trace and *.trace.gz files
// (sorted). Throws std::invalid_argument for a name that is neither or a directory without traces.
std::vector<std::string> expand_traces(const std::vector<std::string>& names);

// "jdk25-javac-hello" for ".../jdk25-javac-hello.trace.gz": the base of the files written for it.
std::string trace_stem(const std::string& path);

}  // namespace lab
