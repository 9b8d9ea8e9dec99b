#pragma once

#include <string>
#include <vector>

#include "output/trace_summary.hpp"
#include "run_result.hpp"
#include "scenarios/scenario.hpp"

namespace lab {

struct ReportOptions {
  std::string out_dir;  // empty: no files
  std::string base_name;  // of the files written; empty: the scenario's name
  std::string command;    // the command line, for titles
  bool plot = true;
  bool step_tables = true;
  bool side_by_side = true;
  std::vector<std::string> notes;  // skipped backends and the like, shown after the tables
  std::string index_page;          // the summary page this page belongs to (a link back), or empty
};

// Prints the verdict, then the tables and the scenario's summary on stdout, and writes
// <out_dir>/<base>.{json,csv,png,html} (the PNG and the page when the open PlotBatch is drawn, if
// there is one). Fills result.verdict.
void report(RunResult& result, const Scenario& scenario, const ReportOptions& options);

// Writes <out_dir>/summary.{json,png,html} of a many-traces replay; returns what it wrote.
std::string write_trace_summary(const TraceSummary& summary, const std::string& out_dir, bool plot,
                                const std::string& command);

}  // namespace lab
