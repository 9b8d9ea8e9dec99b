#pragma once

#include <string>
#include <vector>

#include "run_result.hpp"

namespace lab {

// Runs the scenario once per backend, each in a fresh process of the executable that provides it
// (so that its RSS and mappings are its own and its malloc is the one it claims), one after the
// other so that timings do not compete for the cores. Backends whose executable was not built are
// skipped with a note. `label` (the trace a replay runs) names the run in the progress lines.
std::vector<BackendRun> compare_in_children(const std::string& scenario, const std::vector<std::string>& backends,
                                            const std::vector<std::string>& forwarded_args, bool quiet,
                                            std::vector<std::string>& notes, const std::string& label = "");

}  // namespace lab
