#pragma once

#include <string>
#include <vector>

#include "run_result.hpp"
#include "scenarios/scenario.hpp"

namespace lab {

struct ReportOptions {
  std::string out_dir;  // empty: no files
  bool plot = true;
  bool step_tables = true;
  std::vector<std::string> notes;  // skipped backends and the like, shown before the verdict
};

// Prints the tables, the scenario's summary and the verdict on stdout, and writes
// <out_dir>/<scenario>.{json,csv,png}. Fills result.verdict.
void report(RunResult& result, const Scenario& scenario, const ReportOptions& options);

}  // namespace lab
