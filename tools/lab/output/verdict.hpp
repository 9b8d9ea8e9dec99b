#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_result.hpp"

namespace lab {

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
// one) for the elastic backends; per HotSpot series its own committed/used and, where the series
// has the workload's live, its committed/live; and what a backend had to fall back on.
std::vector<std::string> generic_verdict(const RunResult& result, std::optional<double> elastic_goal);

}  // namespace lab
