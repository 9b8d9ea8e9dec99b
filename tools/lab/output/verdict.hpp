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

// The largest committed/live over the samples whose live is at least 1 % of the run's peak live
// (at the start and after the last release there is nothing live, and a ratio to nothing says
// nothing; those samples are judged in absolute terms instead).
std::optional<MaxRatio> max_committed_ratio(const std::vector<Sample>& samples);

// One line per backend and reference series: its max committed/live, judged against `elastic_goal`
// (if the scenario has one) for the elastic backends; and what a backend had to fall back on.
std::vector<std::string> generic_verdict(const RunResult& result, std::optional<double> elastic_goal);

}  // namespace lab
