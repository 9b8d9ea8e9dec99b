#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lab {

// Version of the JSON document (and of the JSON lines children send); bump on incompatible change.
inline constexpr int kSchemaVersion = 1;

// One measurement point. live = bytes the lab requested and has not freed; used/committed = the
// allocator's own figures; rss/mappings = the process's; elapsed_ns = time of the step that ended
// here (sampling itself excluded).
struct Sample {
  std::string phase;
  int step = 0;
  std::size_t live = 0;
  std::size_t used = 0;
  std::size_t committed = 0;
  std::size_t rss = 0;
  std::size_t mappings = 0;
  std::uint64_t elapsed_ns = 0;
  nlohmann::json extra = nlohmann::json::object();
};

struct BackendRun {
  std::string name;
  std::string executable;
  nlohmann::json settings = nlohmann::json::object();
  std::vector<Sample> samples;
  std::string error;  // non-empty when the run failed; samples then end where it failed
};

// A measured series from elsewhere (HotSpot), shown beside the backends but never judged.
struct ReferenceSeries {
  std::string name;
  std::string source;
  std::vector<Sample> samples;
};

struct RunResult {
  std::string scenario;
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json machine = nlohmann::json::object();
  std::vector<BackendRun> backends;
  std::vector<ReferenceSeries> references;
  std::vector<std::string> verdict;
};

nlohmann::json to_json(const Sample& s);
Sample sample_from_json(const nlohmann::json& j);

}  // namespace lab
