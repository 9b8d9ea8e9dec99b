#pragma once

#include <optional>
#include <string>
#include <vector>

#include "run_result.hpp"

namespace lab {

// The goal of issue 5 for the library's elastic backends: committed ≤ 1.05 × live at every sample.
inline constexpr double kElasticGoal = 1.05;

struct MaxRatio {
  double ratio;
  const Sample* sample;
};

// The largest committed/live over the samples whose live is at least 1 % of the run's peak live
// (at the start and after the last release there is nothing live, and a ratio to nothing says
// nothing; those samples are judged in absolute terms instead).
std::optional<MaxRatio> max_committed_ratio(const std::vector<Sample>& samples);

// One line per backend and reference series: its max committed/live, judged against the goal for
// the elastic backends.
std::vector<std::string> generic_verdict(const RunResult& result);

}  // namespace lab
