#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lab {

// Version of the JSON document (and of the JSON lines children send); bump on incompatible change.
inline constexpr int kSchemaVersion = 2;

// One measurement point. live = bytes the lab requested and has not freed; used/committed = the
// allocator's own figures; footprint = committed + the allocator's bookkeeping outside it;
// rss = the process's resident bytes above its baseline (taken before the backend was created),
// the lab's own tables left out; mappings = the process's; elapsed_ns = time of the step that
// ended here (sampling itself excluded).
struct Sample {
  std::string phase;
  int step = 0;
  std::size_t live = 0;
  std::size_t used = 0;
  std::size_t committed = 0;
  std::size_t footprint = 0;
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
  std::string label;    // what the run is about beyond its scenario (the trace replayed); may be empty
  std::string command;  // the command line that made it
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json machine = nlohmann::json::object();
  std::vector<BackendRun> backends;
  std::vector<ReferenceSeries> references;
  std::vector<std::string> verdict;
};

nlohmann::json to_json(const Sample& s);
Sample sample_from_json(const nlohmann::json& j);

}  // namespace lab
