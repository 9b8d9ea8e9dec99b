#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_result.hpp"

namespace lab {

// A run whose peak live is below this is too small to judge against a footprint/live goal: four
// commit granules of 64 KiB and an allocator's fixed costs outweigh what it holds (`java -version`
// with class-data sharing allocates 61 KB). Its ratios are still printed, the goal is not judged.
constexpr std::size_t kTooSmallToJudgeBytes = 256 * 1024;

// The peak live of the first backend with samples (every backend runs the same workload); 0 if none.
std::size_t peak_live(const RunResult& result);

struct MaxRatio {
  double ratio;
  const Sample* sample;
};

// The largest footprint/live (`footprint` true) or committed/live over the samples whose live is
// at least 1 % of the run's peak live (at the start and after the last release there is nothing
// live, and a ratio to nothing says nothing; those samples are judged in absolute terms instead).
std::optional<MaxRatio> max_ratio(const std::vector<Sample>& samples, bool footprint = true);

// The largest committed/used of a HotSpot series: HotSpot's own view of its overhead.
std::optional<MaxRatio> max_committed_used(const std::vector<Sample>& samples);

// One line per backend: its max footprint/live, judged against `elastic_goal` (if the scenario has
// one) for the elastic backends ("too small to judge" below kTooSmallToJudgeBytes of peak live); per HotSpot series its own committed/used and, where the series
// has the workload's live, its committed/live; and what a backend had to fall back on.
std::vector<std::string> generic_verdict(const RunResult& result, std::optional<double> elastic_goal);

}  // namespace lab
