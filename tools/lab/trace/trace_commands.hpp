#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lab {

// The sub-commands that make traces, `import-hotspot LOG -o TRACE` and `record -o TRACE -- java ...`,
// and one that reads traces: `placement-floor TRACE...` (trace/placement_floor.hpp). (`replay` is a
// scenario and comes with the scenarios.)
class TraceCommands {
 public:
  explicit TraceCommands(CLI::App& app);

  // The exit status when one of these sub-commands was parsed: 0 ok, 1 failed.
  std::optional<int> run() const;

 private:
  int import() const;
  int record() const;
  int floor() const;

  CLI::App* import_ = nullptr;
  CLI::App* record_ = nullptr;
  CLI::App* floor_ = nullptr;
  std::string log_;
  std::string trace_;
  std::string out_;
  std::string keep_log_;
  std::string java_;
  std::string exit_statistics_;
  std::vector<std::string> command_;
  std::vector<std::string> floor_traces_;
};

}  // namespace lab
