#include "trace/trace_commands.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "trace/hotspot_import.hpp"
#include "trace/jdk_locator.hpp"
#include "trace/jvm_recording.hpp"
#include "output/trace_summary.hpp"
#include "trace/placement_floor.hpp"

namespace lab {
namespace {

// The trace is written to a temporary file beside `out` and renamed at the end: a failed import
// leaves nothing behind, not a truncated trace.
std::string temporary_beside(const std::string& out) { return out + fmt::format(".tmp-{}", getpid()); }

// Fails before anything runs when `out` cannot be written (no such folder, no permission).
void check_writable(const std::string& out) {
  const std::string tmp = temporary_beside(out);
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("cannot write {}: {}", out, std::strerror(errno)));
  std::fclose(f);
  std::filesystem::remove(tmp);
}

int import_and_report(const std::string& log, const std::string& out, const ImportOptions& options) {
  const std::string tmp = temporary_beside(out);
  ImportCounts counts;
  std::uint64_t events = 0;
  try {
    TraceWriter writer(tmp, "hotspot log " + std::filesystem::path(log).filename().string(),
                       /*compress=*/out.size() > 3 && out.compare(out.size() - 3, 3, ".gz") == 0);
    counts = import_hotspot_log(log, writer, options);
    writer.finish();
    events = writer.events();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, out);
  std::printf("%s\n", counts.to_json().dump(2).c_str());
  std::fprintf(stderr, "wrote %s: %llu events; replay it on every backend: metaspace-lab compare replay %s\n",
               out.c_str(), static_cast<unsigned long long>(events), out.c_str());
  // Every JVM has one boot loader; a command that started several (a launcher that forks a JVM,
  // javac -J with a second VM) logs them into one file and their runs are merged.
  if (counts.boot_loaders > 1)
    std::fprintf(stderr,
                 "warning: the log holds %llu JVMs (%llu boot loaders): their runs are merged into one trace, "
                 "and HotSpot's figures at the markers are the last JVM's only\n",
                 static_cast<unsigned long long>(counts.boot_loaders),
                 static_cast<unsigned long long>(counts.boot_loaders));
  return 0;
}

}  // namespace

TraceCommands::TraceCommands(CLI::App& app) {
  import_ = app.add_subcommand("import-hotspot", "convert a JDK 16-25 -Xlog:metaspace*=trace log into a trace");
  import_->add_option("log", log_, "the unified-logging file (plain or .gz)")->required();
  import_->add_option("-o,--output", out_, "the trace to write (.gz: compressed)")->required();
  import_->add_option("--exit-statistics", exit_statistics_,
                      "HotSpot's -XX:+PrintMetaspaceStatisticsAtExit output, for the final marker");

  record_ = app.add_subcommand("record", "run a JVM command with metaspace logging, then import its log");
  record_->add_option("-o,--output", out_, "the trace to write (.gz: compressed)")->required();
  record_->add_option("--keep-log", keep_log_, "keep the raw log at this path (default: deleted)");
  record_->add_option("--java", java_,
                      "the JDK to run (its home, or a launcher in its bin/); default: JAVA_HOME, else the "
                      "command's launcher on PATH");
  record_->add_option("command", command_, "the command, after --, e.g. -- java -Xshare:off -version")->required();

  floor_ = app.add_subcommand("placement-floor",
                              "the least footprint/live an allocator that keeps blocks in place and cannot foresee "
                              "deaths can expect at each marker of a trace (docs/placement-bound.md)");
  floor_->add_option("trace", floor_traces_, "traces (plain or .gz), or folders of *.trace[.gz]")->required();
}

std::optional<int> TraceCommands::run() const {
  try {
    if (import_->parsed()) return import();
    if (record_->parsed()) return record();
    if (floor_->parsed()) return floor();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metaspace-lab %s: %s\n",
                 import_->parsed() ? "import-hotspot" : record_->parsed() ? "record" : "placement-floor", e.what());
    return 1;
  }
  return std::nullopt;
}

int TraceCommands::import() const {
  check_writable(out_);
  ImportOptions options;
  options.exit_statistics_path = exit_statistics_;
  return import_and_report(log_, out_, options);
}

int TraceCommands::record() const {
  check_writable(out_);  // before the JVM runs, not after
  if (!keep_log_.empty()) check_writable(keep_log_);
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("metaspace-lab-record-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string log = keep_log_.empty() ? (dir / "metaspace.log").string() : keep_log_;
  const std::string vm_output = (dir / "vm-output.txt").string();
  // The JDK, named before it runs: which one PATH finds is rarely obvious, and each logs its own dialect.
  const Jdk jdk = locate_jdk(java_, command_[0]);
  std::vector<std::string> command = command_;
  if (!java_.empty() || jdk.chosen_by == "JAVA_HOME") command[0] = jdk_launcher(jdk, command[0]);
  std::fprintf(stderr, "record: JDK %s at %s (%s); another JDK: --java JDK_HOME or JAVA_HOME=JDK_HOME\n",
               jdk.version.empty() ? "of unknown version" : jdk.version.c_str(), jdk.home.c_str(),
               jdk.chosen_by.c_str());
  if (jdk.feature > 0 && jdk.feature < 16) {
    std::filesystem::remove_all(dir);
    throw std::runtime_error(fmt::format(
        "JDK {} logs no metaspace allocation (its metaspace predates the elastic one of JDK 16): there is nothing "
        "to record; run the command on JDK 16-25 (--java JDK_HOME)",
        jdk.feature));
  }
  if (jdk.feature > 25)
    std::fprintf(stderr, "record: JDK %d is newer than the JDK 25 the importer knows; importing what it logs\n",
                 jdk.feature);
  const int status = run_jvm_recording(command, log, vm_output);
  std::error_code ec;
  if (!std::filesystem::exists(log, ec) || std::filesystem::file_size(log, ec) == 0) {
    std::filesystem::remove_all(dir, ec);
    throw std::runtime_error(fmt::format(
        "the command produced no metaspace log (exit status {}): it is not a JDK launcher (java, javac, jshell, ...) "
        "that honours JAVA_TOOL_OPTIONS, or it ended before a JVM started; no trace written",
        status));
  }
  if (status != 0) std::fprintf(stderr, "record: the command exited with status %d; importing what it logged\n", status);
  ImportOptions options;
  if (std::filesystem::exists(vm_output)) options.exit_statistics_path = vm_output;
  int rc = 1;
  try {
    rc = import_and_report(log, out_, options);
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  std::filesystem::remove_all(dir);
  return status != 0 ? 1 : rc;
}

// Per trace: one line per marker (the figures scripts/placement-bound.py prints for it) and per
// end of a run of deaths (deaths-k, where the replay samples too), then the worst; with several
// traces, a table of their worst points at the end. Live in MiB, as everywhere in the lab.
int TraceCommands::floor() const {
  const auto traces = expand_traces(floor_traces_);
  std::vector<std::pair<std::string, std::optional<PlacementFloor::Point>>> worst;
  for (const auto& trace : traces) {
    const PlacementFloor floor = read_placement_floor(trace);
    if (traces.size() > 1) std::printf("==== %s\n", trace_stem(trace).c_str());
    std::printf("%-10s %9s %7s %10s\n", "point", "live MiB", "floor", "+ objects");
    for (const auto& p : floor.points())
      std::printf("%-10s %9.3f %7.4f %10.4f\n", p.label.c_str(), static_cast<double>(p.live) / (1024.0 * 1024.0),
                  p.memory, p.with_bookkeeping);
    const auto w = floor.worst();
    worst.emplace_back(trace_stem(trace), w);
    if (!w) {
      std::printf("no marker with live data\n");
    } else {
      std::printf("worst: %.4f with the loader objects, %.4f without (%s; points with live >= 1 %% of the peak)\n",
                  w->with_bookkeeping, w->memory, w->label.c_str());
    }
    if (traces.size() > 1) std::printf("\n");
  }
  if (traces.size() > 1) {
    std::printf("worst point per trace:\n%-28s %9s %10s  %s\n", "trace", "floor", "+ objects", "at");
    for (const auto& [name, w] : worst) {
      if (!w) {
        std::printf("%-28s %9s\n", name.c_str(), "-");
        continue;
      }
      std::printf("%-28s %9.4f %10.4f  %s (live %.3f MiB)\n", name.c_str(), w->memory, w->with_bookkeeping,
                  w->label.c_str(), static_cast<double>(w->live) / (1024.0 * 1024.0));
    }
  }
  return 0;
}

}  // namespace lab
