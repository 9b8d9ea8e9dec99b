#include "output/report.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "output/csv_output.hpp"
#include "output/json_output.hpp"
#include "output/plot.hpp"
#include "output/table.hpp"
#include "output/verdict.hpp"

namespace lab {

void report(RunResult& result, const Scenario& scenario, const ReportOptions& options) {
  result.verdict = generic_verdict(result, scenario.elastic_goal());
  for (auto& line : scenario.verdict(result)) result.verdict.push_back(std::move(line));

  std::string out = fmt::format("metaspace-lab {} (seed {})\n\n", result.scenario, result.params.value("seed", 0));
  if (options.step_tables) out += format_step_tables(result);
  if (result.backends.size() + result.references.size() > 1) out += format_side_by_side(result) + "\n";
  const std::string summary = scenario.summary(result);
  if (!summary.empty()) out += summary + "\n";
  for (const auto& n : options.notes) out += "note: " + n + "\n";
  for (const auto& b : result.backends)
    if (!b.error.empty()) out += fmt::format("FAILED {}: {}\n", b.name, b.error);
  out += "verdict:\n";
  for (const auto& v : result.verdict) out += "  " + v + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);

  if (options.out_dir.empty()) return;
  std::filesystem::create_directories(options.out_dir);
  const std::string base = (std::filesystem::path(options.out_dir) / result.scenario).string();
  write_json(result, base + ".json");
  write_csv(result, base + ".csv");
  std::string written = fmt::format("wrote {0}.json, {0}.csv", base);
  if (options.plot) {
    const std::string problem = render_plot(base + ".json", base + ".png");
    if (problem.empty()) {
      written += fmt::format(" and the plot {}.png", base);
    } else {
      std::fprintf(stdout, "%s\n", problem.c_str());
    }
  }
  std::fprintf(stdout, "%s\n", written.c_str());
}

}  // namespace lab
