#include "output/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "output/csv_output.hpp"
#include "output/html_report.hpp"
#include "output/json_output.hpp"
#include "output/plot.hpp"
#include "output/table.hpp"
#include "output/units.hpp"
#include "output/verdict.hpp"

namespace lab {
namespace {

// One row per backend and reference series: the figures a reader compares first.
std::vector<std::vector<std::string>> overview_rows(const RunResult& result) {
  std::vector<std::vector<std::string>> rows = {{"series", "max footprint/live", "at", "max committed/live",
                                                 "peak footprint MiB", "last footprint MiB", "peak RSS MiB", "note"}};
  auto row = [&](const std::string& name, const std::vector<Sample>& samples, const std::string& note) {
    auto f = max_ratio(samples, true);
    auto c = max_ratio(samples, false);
    std::size_t peak = 0, rss = 0;
    for (const auto& s : samples) peak = std::max(peak, s.footprint), rss = std::max(rss, s.rss);
    rows.push_back({name, f ? format_ratio(f->ratio) : "-",
                    f ? fmt::format("{} {}", f->sample->phase, f->sample->step) : "",
                    c ? format_ratio(c->ratio) : "-", mib(peak), samples.empty() ? "-" : mib(samples.back().footprint),
                    rss ? mib(rss) : "-", note});
  };
  for (const auto& b : result.backends) row(b.name, b.samples, b.error.empty() ? "" : "FAILED: " + b.error);
  for (const auto& r : result.references)
    row(r.name, r.samples, "HotSpot: footprint = its committed; RSS (if any) is the whole JVM's");
  return rows;
}

// The load averages as the machine reports them, rounded: "0.84 1.12 1.30 (1, 5, 15 min)".
std::string format_load(const nlohmann::json& loads) {
  if (!loads.is_array() || loads.empty()) return loads.dump();
  std::string out;
  for (const auto& l : loads) out += fmt::format("{}{:.2f}", out.empty() ? "" : " ", l.get<double>());
  return out + (loads.size() == 3 ? " (1, 5, 15 min)" : "");
}

// What a figure drawn by the run's plot batch prints once its page is written: the figure and the
// page, or why the figure is missing and the page.
void say_page_written(const std::string& base, const std::string& problem) {
  if (problem.empty())
    std::fprintf(stdout, "wrote %s.png, %s.html\n", base.c_str(), base.c_str());
  else
    std::fprintf(stdout, "%s\nwrote %s.html\n", problem.c_str(), base.c_str());
}

std::string title_of(const RunResult& result) {
  return result.label.empty() ? fmt::format("metaspace-lab {}", result.scenario)
                              : fmt::format("metaspace-lab {}: {}", result.scenario, result.label);
}

}  // namespace

void report(RunResult& result, const Scenario& scenario, const ReportOptions& options) {
  result.verdict = generic_verdict(result, scenario.elastic_goal());
  for (auto& line : scenario.verdict(result)) result.verdict.push_back(std::move(line));
  result.command = options.command;
  if (options.base_name != result.scenario) result.label = options.base_name;

  // The verdict first: the tables after it are what it is drawn from.
  std::string out = result.label.empty()
                        ? fmt::format("metaspace-lab {} (seed {})\n", result.scenario, result.params.value("seed", 0))
                        : fmt::format("metaspace-lab {} {}\n", result.scenario, result.label);
  for (const auto& b : result.backends)
    if (!b.error.empty()) out += fmt::format("FAILED {}: {}\n", b.name, b.error);
  out += "verdict:\n";
  for (const auto& v : result.verdict) out += "  " + v + "\n";
  out += "\n";
  if (options.step_tables) out += format_step_tables(result);
  std::string side_by_side;
  if (result.backends.size() + result.references.size() > 1) side_by_side = format_side_by_side(result);
  if (options.side_by_side && !side_by_side.empty()) out += side_by_side + "\n";
  const std::string summary = scenario.summary(result);
  if (!summary.empty()) out += summary + "\n";
  for (const auto& n : options.notes) out += "note: " + n + "\n";
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);

  if (options.out_dir.empty()) return;
  std::filesystem::create_directories(options.out_dir);
  const std::string base =
      (std::filesystem::path(options.out_dir) / (options.base_name.empty() ? result.scenario : options.base_name))
          .string();
  write_json(result, base + ".json");
  write_csv(result, base + ".csv");

  // The page embeds the figure, so it is written once the figure is drawn: now, or when the
  // command's batch draws all its figures.
  auto write_page = [result, summary, side_by_side, options, base](const std::string& problem) {
    HtmlReport html(title_of(result));
    if (!options.index_page.empty())
      html.link_paragraph("\u2190 all traces: ", options.index_page, std::filesystem::path(options.index_page).stem().string());
    html.paragraph("Command: " + options.command);
    const auto& m = result.machine;
    if (m.contains("load_average"))
      html.paragraph(fmt::format("Machine: {} CPUs, {}, load average {} at {}", m.value("cpus", 0),
                                 m.value("kernel", std::string()), format_load(m["load_average"]),
                                 m.value("time_utc", std::string())));
    html.heading("Verdict");
    html.verdict(result.verdict);
    if (options.plot && problem.empty()) {
      html.figure(base + ".png", title_of(result));
    } else if (options.plot) {
      html.paragraph(problem);
    }
    html.heading("Backends");
    html.table(overview_rows(result));
    if (!summary.empty()) {
      html.heading("Scenario summary");
      html.preformatted(summary);
    }
    if (!side_by_side.empty()) {
      html.heading("Side by side, per step");
      html.preformatted(side_by_side);
    }
    for (const auto& n : options.notes) html.paragraph("Note: " + n);
    html.paragraph(fmt::format("Files: {0}.json (every sample), {0}.csv. footprint = committed + the allocator's "
                               "bookkeeping outside it; RSS is above the process's own baseline, the lab's tables "
                               "left out (tools/lab/README.md).",
                               std::filesystem::path(base).filename().string()));
    html.write(base + ".html");
  };
  if (!options.plot) {
    write_page("");
    std::fprintf(stdout, "wrote %s.json, %s.csv, %s.html\n", base.c_str(), base.c_str(), base.c_str());
  } else if (PlotBatch* batch = PlotBatch::current()) {
    batch->add(base + ".json", base + ".png", [write_page, base](const std::string& problem) {
      write_page(problem);
      say_page_written(base, problem);
    });
    std::fprintf(stdout, "wrote %s.json, %s.csv (the figure and the page follow)\n", base.c_str(), base.c_str());
  } else {
    const std::string problem = render_plot(base + ".json", base + ".png");
    if (!problem.empty()) std::fprintf(stdout, "%s\n", problem.c_str());
    write_page(problem);
    std::fprintf(stdout, "wrote %s.json, %s.csv, %s.html%s\n", base.c_str(), base.c_str(), base.c_str(),
                 problem.empty() ? fmt::format(" and the plot {}.png", base).c_str() : "");
  }
}

std::string write_trace_summary(const TraceSummary& summary, const std::string& out_dir, bool plot,
                                const std::string& command) {
  std::filesystem::create_directories(out_dir);
  const std::string base = (std::filesystem::path(out_dir) / "summary").string();
  {
    nlohmann::json j = summary.to_json();
    j["command"] = command;
    std::ofstream out(base + ".json");
    out << j.dump(2) << '\n';
    if (!out) throw std::runtime_error("cannot write " + base + ".json");
  }
  {
    std::ofstream out(base + ".md");
    out << summary.markdown();
    if (!out) throw std::runtime_error("cannot write " + base + ".md");
  }
  auto write_page = [summary, command, base, plot](const std::string& problem) {
    std::vector<std::string> traces;
    for (const auto& r : summary.rows)
      if (traces.empty() || traces.back() != r.trace) traces.push_back(r.trace);
    HtmlReport html(fmt::format("metaspace-lab: {} traces replayed", traces.size()));
    html.paragraph("Command: " + command);
    if (const std::string goal = summary.goal_line(); !goal.empty()) {
      html.heading("Verdict");
      std::vector<std::string> lines;
      std::string rest = goal;
      for (std::size_t nl; (nl = rest.find('\n')) != std::string::npos; rest.erase(0, nl + 1)) lines.push_back(rest.substr(0, nl));
      if (!rest.empty()) lines.push_back(rest);
      html.verdict(lines);
    }
    html.heading("Traces");
    std::vector<std::pair<std::string, std::string>> links;
    for (const auto& t : traces) links.emplace_back(t + ".html", t);
    html.link_list(links);
    if (plot && problem.empty()) html.figure(base + ".png", "worst footprint/live per trace and backend");
    if (!problem.empty()) html.paragraph(problem);
    std::vector<std::vector<std::string>> rows = {
        {"trace", "backend", "max footprint/live", "= memory (committed/live)", "+ bookkeeping (overhead/live)",
         "median", "at HotSpot's worst", "peak RSS MiB", "valley RSS MiB"}};
    for (const auto& r : summary.rows)
      rows.push_back({r.trace, r.backend, format_ratio3(r.max_footprint_live), format_ratio3(r.committed_at_max),
                      format_ratio3(r.overhead_at_max), format_ratio3(r.median_footprint_live),
                      format_ratio3(r.at_hotspot_worst), mib(r.peak_rss), mib(r.valley_rss)});
    html.heading("Per trace and backend");
    html.table(rows, /*link_first_column=*/".html");
    std::vector<std::vector<std::string>> hs = {
        {"trace", "HotSpot max committed/used", "median committed/used", "max committed / trace live", "points"}};
    for (const auto& h : summary.hotspot)
      hs.push_back({h.trace, format_ratio3(h.max_own), format_ratio3(h.median_own), format_ratio3(h.max_live),
                    std::to_string(h.points)});
    html.heading("HotSpot on the same traces (its own figures)");
    html.table(hs, ".html");
    if (!summary.floors.empty()) {
      std::vector<std::vector<std::string>> fl = {
          {"trace", "placement floor", "of it: memory", "of it: loader objects and dead handles", "at"}};
      for (const auto& f : summary.floors)
        fl.push_back({f.trace, format_ratio3(f.worst.with_bookkeeping), format_ratio3(f.worst.memory),
                      format_ratio3(f.worst.bookkeeping()), f.worst.label});
      html.heading("Placement floor");
      html.paragraph("The least footprint/live an allocator that keeps every block where it put it, gives memory back "
                     "a page at a time and cannot foresee which loaders die first can expect at the trace's worst "
                     "point, a marker or the end of a run of deaths (docs/placement-bound.md; metaspace-lab "
                     "placement-floor TRACE prints every point).");
      html.table(fl, ".html");
    }
    html.write(base + ".html");
  };
  if (!plot) {
    write_page("");
    return fmt::format("wrote {0}.json, {0}.md, {0}.html", base);
  }
  if (PlotBatch* batch = PlotBatch::current()) {
    batch->add(base + ".json", base + ".png", [write_page, base](const std::string& problem) {
      write_page(problem);
      say_page_written(base, problem);
    });
    return fmt::format("wrote {0}.json, {0}.md (the figure and the page follow)", base);
  }
  const std::string problem = render_plot(base + ".json", base + ".png");
  write_page(problem);
  return fmt::format("wrote {0}.json, {0}.md, {0}.html{1}", base, problem.empty() ? " and the plot " + base + ".png" : "");
}

}  // namespace lab
