#pragma once

#include <string>

#include "run_result.hpp"

namespace lab {

// One block per backend (and per reference series), one row per sample: live, used, committed,
// committed/live, RSS, mappings and the step's time.
std::string format_step_tables(const RunResult& result);

// The backends side by side, one row per step: committed/live and RSS, so that the difference is
// visible at a glance.
std::string format_side_by_side(const RunResult& result);

}  // namespace lab
