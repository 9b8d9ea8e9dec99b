#include "cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <metaspace/metaspace.h>
#include <optional>
#include <stdexcept>

#include "backend_registry.hpp"
#include "command_registry.hpp"
#include "compare/child_protocol.hpp"
#include "compare/compare_driver.hpp"
#include "file_locator.hpp"
#include "hotspot_reference.hpp"
#include "output/json_output.hpp"
#include "output/plot.hpp"
#include "output/report.hpp"
#include "output/trace_summary.hpp"
#include "runner.hpp"
#include "scenarios/replay.hpp"
#include "scenarios/scenario.hpp"
#include "trace/trace_commands.hpp"

namespace lab {
namespace {

// Flags that steer this process only; they are not handed on to `compare` children.
struct RunOptions {
  std::vector<std::string> backends;
  std::string out_dir = "lab-out";
  std::string reference;
  bool quiet = false;
  bool no_plot = false;
  bool no_files = false;
  bool brief = false;
  bool emit_jsonl = false;
};

// What `compare` runs when no --backends are given: the library's variants that matter and every
// alternative (those whose executable was not built are skipped with a note).
const std::vector<std::string> kCompareDefault = {"elastic", "elastic-16k", "no-reclaim", "malloc",
                                                  "malloc-trim", "mimalloc", "jemalloc"};
// A direct run stays in one process, so it offers the backends of this executable.
const std::vector<std::string> kDirectPreferred = {"elastic", "no-reclaim", "malloc", "mimalloc", "jemalloc"};

void add_run_options(CLI::App& app, RunOptions& run, bool compare) {
  app.add_option("--backends", run.backends,
                 compare ? "backends to compare, comma separated (default: " + fmt::format("{}", fmt::join(kCompareDefault, ",")) + ")"
                         : "backends to run in this process, comma separated")
      ->delimiter(',');
  app.add_option("--out", run.out_dir, "folder for the JSON, CSV and PNG")->capture_default_str();
  app.add_option("--reference", run.reference, "HotSpot reference CSV (default: tools/lab/data/...)");
  app.add_flag("--quiet", run.quiet, "no progress output on stderr");
  app.add_flag("--no-plot", run.no_plot, "do not draw the PNG");
  app.add_flag("--no-files", run.no_files, "print only, write no JSON/CSV/PNG");
  app.add_flag("--brief", run.brief, "skip the per-backend step tables, keep the side-by-side view and verdict");
  if (!compare) app.add_flag("--emit-jsonl", run.emit_jsonl, "stream samples as JSON lines on stdout (used by compare)")->group("");
}

void validate_alignment(std::size_t a) {
  if (a != 0 && (a < 8 || a > 1024 || (a & (a - 1)) != 0))
    throw std::invalid_argument(fmt::format("--class-alignment: {} is not 0 (library default) or a power of 2 "
                                            "between 8 and 1024",
                                            a));
}

std::vector<std::string> resolve_backends(const RunOptions& run, bool compare) {
  std::vector<std::string> names = run.backends;
  if (names.empty()) {
    if (compare) {
      names = kCompareDefault;
    } else {
      for (const auto& n : kDirectPreferred)
        if (find_backend_factory(n)) names.push_back(n);
    }
  }
  for (const auto& n : names) {
    auto entry = find_backend_entry(n);
    if (!entry) {
      std::string known;
      for (const auto& e : backend_catalog()) known += (known.empty() ? "" : ", ") + e.name;
      throw std::invalid_argument(fmt::format("unknown backend '{}' (known: {})", n, known));
    }
    if (!compare && !find_backend_factory(n))
      throw std::invalid_argument(fmt::format("backend {} lives in {} (its allocator replaces malloc for the whole "
                                              "process); run it with `metaspace-lab compare <scenario> --backends {}`",
                                              n, entry->executable, n));
  }
  return names;
}

int list_backends() {
  const auto dir = executable_dir();
  for (const auto& e : backend_catalog()) {
    const bool here = static_cast<bool>(find_backend_factory(e.name));
    const bool built = here || std::filesystem::exists(dir / e.executable);
    std::printf("%-12s %-24s %-10s %s\n", e.name.c_str(), e.executable.c_str(), built ? "available" : "not built",
                e.description.c_str());
  }
  return 0;
}

void emit(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// What a run writes and shows beyond its scenario: the file base name (the scenario, or the trace
// replayed) and the command line (figure titles, the HTML page).
struct RunLabels {
  std::string base_name;
  std::string command;
  bool many = false;  // one of several traces: the summary follows, keep each trace's output short
};

int run_scenario(const Scenario& scenario, const ParamSet& params, const WorkloadParams& workload,
                 const BackendOptions& options, const RunOptions& run, bool compare, const RunLabels& labels,
                 RunResult* keep = nullptr) {
  const auto backends = resolve_backends(run, compare);

  if (run.emit_jsonl) {
    bool failed = false;
    for (const auto& name : backends) {
      auto r = run_in_process(
          scenario, name, workload, options, !run.quiet, [](const BackendRun& b) { emit(backend_line(b)); },
          [](const Sample& s) { emit(sample_line(s)); });
      if (!r.error.empty()) {
        emit(error_line(r.error));
        failed = true;
      }
      emit(end_line());
    }
    return failed ? 1 : 0;
  }

  RunResult result;
  result.scenario = scenario.name();
  result.params = params.to_json();
  result.machine = describe_machine();
  ReportOptions report_options;
  if (compare) {
    result.backends = compare_in_children(scenario.name(), backends, params.to_args(), run.quiet, report_options.notes,
                                          labels.base_name);
  } else {
    if (backends.size() > 1)
      report_options.notes.push_back("all backends ran in this one process, so RSS and mappings include the earlier "
                                     "ones' leftovers; `compare` runs each in its own process");
    for (const auto& name : backends)
      result.backends.push_back(run_in_process(scenario, name, workload, options, !run.quiet));
  }
  if (scenario.shows_hotspot_reference()) {
    const std::string path = find_hotspot_reference(run.reference);
    if (path.empty()) {
      report_options.notes.push_back("HotSpot reference data not found (tools/lab/data); pass --reference FILE");
    } else {
      result.references.push_back(load_hotspot_reference(path));
    }
  }
  // A replayed trace carries HotSpot's own figures for the same workload.
  if (dynamic_cast<const ReplayScenario*>(&scenario)) {
    auto hotspot = hotspot_series(result);
    if (!hotspot.samples.empty()) result.references.push_back(std::move(hotspot));
  }
  report_options.out_dir = run.no_files ? "" : run.out_dir;
  report_options.plot = !run.no_plot;
  report_options.step_tables = !run.brief && !labels.many;
  report_options.side_by_side = !labels.many;
  report_options.base_name = labels.base_name;
  report_options.command = labels.command;
  if (labels.many) report_options.index_page = "summary.html";
  {
    // One python3 process draws the run's figures (a batch the caller opened, or this one).
    std::optional<PlotBatch> own_batch;
    if (!PlotBatch::current()) own_batch.emplace(!run.quiet);
    report(result, scenario, report_options);
  }
  int status = 0;
  for (const auto& b : result.backends)
    if (!b.error.empty()) status = 1;
  if (keep) *keep = std::move(result);
  return status;
}

// `replay A B DIR ...`: each trace in turn (files named after it), then one summary table, its JSON
// and one summary figure.
int run_replays(ReplayScenario& replay, const ParamSet& params, const WorkloadParams& workload,
                const BackendOptions& options, const RunOptions& run, bool compare, const std::string& command) {
  std::vector<std::string> names = replay.traces;
  if (!replay.trace.empty()) names.push_back(replay.trace);
  if (names.empty()) throw std::invalid_argument("replay needs a trace: metaspace-lab replay TRACE [TRACE|DIR ...]");
  const auto traces = expand_traces(names);
  // A bad trace is said once, here, not once per backend; the same pass finds its placement floor.
  std::vector<std::optional<PlacementFloor::Point>> floors(traces.size());
  if (!run.emit_jsonl)
    for (std::size_t i = 0; i < traces.size(); ++i) floors[i] = check_trace(traces[i]);
  for (const auto& t : traces) {
    replay.trace = t;
    replay.validate();
  }
  if (traces.size() == 1) {
    replay.trace = traces[0];
    replay.floor = floors[0];
    return run_scenario(replay, params, workload, options, run, compare, {trace_stem(traces[0]), command});
  }
  TraceSummary summary;
  int status = 0;
  PlotBatch figures(!run.quiet);  // every trace's figure and the summary's, drawn at the end
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const std::string& t = traces[i];
    replay.trace = t;
    replay.floor = floors[i];
    std::fprintf(stdout, "==== %s\n", t.c_str());
    RunResult result;
    status |= run_scenario(replay, params, workload, options, run, compare, {trace_stem(t), command, true}, &result);
    summary.add(trace_stem(t), result);
    if (floors[i]) summary.add_floor(trace_stem(t), *floors[i]);
    std::fputc('\n', stdout);
  }
  std::fprintf(stdout, "summary over %zu traces:\n%s", traces.size(), summary.format().c_str());
  if (!run.no_files) {
    const std::string written = write_trace_summary(summary, run.out_dir, !run.no_plot, command);
    std::fprintf(stdout, "%s\n", written.c_str());
    std::fflush(stdout);
    figures.draw();
    std::fprintf(stdout, "open %s\n", (std::filesystem::path(run.out_dir) / "summary.html").string().c_str());
  }
  std::fflush(stdout);
  return status;
}

}  // namespace

std::string lab_version() {
#ifdef MS_VERSION_PATCH
  const std::string library = fmt::format("{}.{}.{}", MS_VERSION_MAJOR, MS_VERSION_MINOR, MS_VERSION_PATCH);
#else
  const std::string library = fmt::format("{}.{}", MS_VERSION_MAJOR, MS_VERSION_MINOR);
#endif
  return fmt::format("metaspace-lab {} (libmetaspace {}, output schema {})", library, library, kSchemaVersion);
}

int run_cli(int argc, char** argv) {
  CLI::App app{"metaspace-lab: the seed experiments of libmetaspace, side by side against malloc, mimalloc and "
               "jemalloc"};
  app.require_subcommand(1);
  app.set_version_flag("--version", lab_version());

  auto scenarios = make_scenarios();
  // Registered here because `replay TRACE` takes its trace as a positional argument too.
  auto* replay = static_cast<ReplayScenario*>(scenarios.emplace_back(std::make_unique<ReplayScenario>()).get());
  WorkloadParams workload;
  BackendOptions options;
  RunOptions run;
  std::map<const Scenario*, ParamSet> params;
  std::map<CLI::App*, std::pair<Scenario*, bool>> commands;  // sub-command -> scenario, is compare

  auto* backends_cmd = app.add_subcommand("backends", "list the backends and which executable provides each");
  auto* compare = app.add_subcommand("compare", "run a scenario on several backends, each in its own process");
  compare->require_subcommand(1);
  TraceCommands trace_commands(app);
  auto extra_commands = make_registered_commands();
  for (auto& c : extra_commands) c->add_to(app);
  for (auto& sc : scenarios) {
    ParamSet& ps = params[sc.get()];
    sc->add_flags(ps);
    workload.add_flags(ps);
    ps.add("--class-alignment", options.class_alignment_bytes,
           "class-space block alignment in bytes (0: the backend's default)");
    for (bool is_compare : {false, true}) {
      CLI::App* cmd = (is_compare ? compare : &app)->add_subcommand(sc->name(), sc->description());
      ps.bind(*cmd);
      if (sc.get() == replay)
        cmd->add_option("TRACE", replay->traces, "traces to replay, or folders of *.trace[.gz] (compare: one summary)");
      add_run_options(*cmd, run, is_compare);
      commands[cmd] = {sc.get(), is_compare};
    }
  }

  // CLI11 says only "A subcommand is required" for `metaspace-lab bogus`: name the word instead.
  auto unknown_command = [](CLI::App& parent, int at, int argc, char** argv) -> std::optional<std::string> {
    if (argc <= at || argv[at][0] == '-') return std::nullopt;
    std::string known;
    for (const auto* sub : parent.get_subcommands({})) {
      if (sub->get_name() == argv[at]) return std::nullopt;
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    return fmt::format("unknown command '{}' (commands: {})", argv[at], known);
  };
  auto problem = unknown_command(app, 1, argc, argv);
  if (!problem && argc > 1 && std::string(argv[1]) == "compare") problem = unknown_command(*compare, 2, argc, argv);
  if (problem) {
    std::fprintf(stderr, "metaspace-lab: error: %s\n", problem->c_str());
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (backends_cmd->parsed()) return list_backends();
  if (auto status = trace_commands.run()) return *status;
  for (auto& c : extra_commands)
    if (auto status = c->run()) return *status;

  for (auto& [cmd, target] : commands) {
    if (!cmd->parsed()) continue;
    auto [scenario, is_compare] = target;
    try {
      workload.validate();
      validate_alignment(options.class_alignment_bytes);
      std::string command = "metaspace-lab";
      for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
      if (scenario == replay)
        return run_replays(*replay, params[scenario], workload, options, run, is_compare, command);
      scenario->validate();
      return run_scenario(*scenario, params[scenario], workload, options, run, is_compare,
                          {scenario->name(), command});
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "metaspace-lab %s: error: %s\n", scenario->name().c_str(), e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "metaspace-lab %s: %s\n", scenario->name().c_str(), e.what());
      return 1;
    }
  }
  return 2;
}

}  // namespace lab
