#include "compare/child_protocol.hpp"

#include <nlohmann/json.hpp>

namespace lab {

std::string backend_line(const BackendRun& run) {
  return nlohmann::json{{"type", "backend"},
                        {"schema_version", kSchemaVersion},
                        {"name", run.name},
                        {"executable", run.executable},
                        {"settings", run.settings}}
      .dump();
}

std::string sample_line(const Sample& sample) {
  nlohmann::json j = to_json(sample);
  j["type"] = "sample";
  return j.dump();
}

std::string error_line(const std::string& message) { return nlohmann::json{{"type", "error"}, {"message", message}}.dump(); }

std::string end_line() { return nlohmann::json{{"type", "end"}}.dump(); }

void ChildStreamParser::feed(const std::string& line) {
  if (line.empty()) return;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    if (!runs_.empty()) runs_.back().error = "unreadable line from the child: " + line.substr(0, 200);
    return;
  }
  const std::string type = j.value("type", "");
  if (type == "backend") {
    BackendRun run;
    run.name = j.value("name", "");
    run.executable = j.value("executable", "");
    run.settings = j.value("settings", nlohmann::json::object());
    if (j.value("schema_version", 0) != kSchemaVersion)
      run.error = "the child speaks schema version " + std::to_string(j.value("schema_version", 0));
    runs_.push_back(std::move(run));
    ended_ = false;
  } else if (type == "sample" && !runs_.empty()) {
    runs_.back().samples.push_back(sample_from_json(j));
  } else if (type == "error" && !runs_.empty()) {
    runs_.back().error = j.value("message", "unknown error");
  } else if (type == "end") {
    ended_ = true;
  }
}

std::vector<BackendRun> ChildStreamParser::finish(int exit_status) {
  if (!runs_.empty() && runs_.back().error.empty() && (!ended_ || exit_status != 0))
    runs_.back().error = "the child process ended early (exit status " + std::to_string(exit_status) + ")";
  return std::move(runs_);
}

}  // namespace lab
