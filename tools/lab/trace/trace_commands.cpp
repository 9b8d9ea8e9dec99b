#include "trace/trace_commands.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "trace/hotspot_import.hpp"
#include "trace/jvm_recording.hpp"

namespace lab {
namespace {

int import_and_report(const std::string& log, const std::string& out, const ImportOptions& options) {
  TraceWriter writer(out, "hotspot log " + std::filesystem::path(log).filename().string());
  const ImportCounts counts = import_hotspot_log(log, writer, options);
  writer.finish();
  std::printf("%s\n", counts.to_json().dump(2).c_str());
  std::fprintf(stderr, "wrote %s: %llu events\n", out.c_str(), static_cast<unsigned long long>(writer.events()));
  return 0;
}

}  // namespace

TraceCommands::TraceCommands(CLI::App& app) {
  import_ = app.add_subcommand("import-hotspot", "convert a JDK 25 -Xlog:metaspace*=trace log into a trace");
  import_->add_option("log", log_, "the unified-logging file (plain or .gz)")->required();
  import_->add_option("-o,--output", out_, "the trace to write (.gz: compressed)")->required();
  import_->add_option("--exit-statistics", exit_statistics_,
                      "HotSpot's -XX:+PrintMetaspaceStatisticsAtExit output, for the final marker");

  record_ = app.add_subcommand("record", "run a JVM command with metaspace logging, then import its log");
  record_->add_option("-o,--output", out_, "the trace to write (.gz: compressed)")->required();
  record_->add_option("--keep-log", keep_log_, "keep the raw log at this path (default: deleted)");
  record_->add_option("command", command_, "the command, after --, e.g. -- java -Xshare:off -version")->required();
}

std::optional<int> TraceCommands::run() const {
  try {
    if (import_->parsed()) return import();
    if (record_->parsed()) return record();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metaspace-lab %s: %s\n", import_->parsed() ? "import-hotspot" : "record", e.what());
    return 1;
  }
  return std::nullopt;
}

int TraceCommands::import() const {
  ImportOptions options;
  options.exit_statistics_path = exit_statistics_;
  return import_and_report(log_, out_, options);
}

int TraceCommands::record() const {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("metaspace-lab-record-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string log = keep_log_.empty() ? (dir / "metaspace.log").string() : keep_log_;
  const std::string vm_output = (dir / "vm-output.txt").string();
  const int status = run_jvm_recording(command_, log, vm_output);
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

}  // namespace lab
