#include "output/json_output.hpp"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/chrono.h>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace lab {
namespace {

nlohmann::json samples_json(const std::vector<Sample>& samples) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : samples) out.push_back(to_json(s));
  return out;
}

}  // namespace

nlohmann::json to_json(const RunResult& result) {
  nlohmann::json backends = nlohmann::json::array();
  for (const auto& b : result.backends) {
    nlohmann::json j = {{"name", b.name}, {"executable", b.executable}, {"settings", b.settings},
                        {"samples", samples_json(b.samples)}};
    if (!b.error.empty()) j["error"] = b.error;
    backends.push_back(std::move(j));
  }
  nlohmann::json references = nlohmann::json::array();
  for (const auto& r : result.references)
    references.push_back({{"name", r.name}, {"source", r.source}, {"samples", samples_json(r.samples)}});
  return {{"schema_version", kSchemaVersion}, {"scenario", result.scenario}, {"label", result.label},
          {"command", result.command},        {"params", result.params},
          {"machine", result.machine},        {"backends", backends},        {"references", references},
          {"verdict", result.verdict}};
}

void write_json(const RunResult& result, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << to_json(result).dump(2) << '\n';
}

nlohmann::json describe_machine() {
  struct utsname u {};
  uname(&u);
  const auto now = std::chrono::system_clock::now();
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) load[0] = load[1] = load[2] = 0;
  return {{"kernel", std::string(u.sysname) + " " + u.release},
          {"arch", u.machine},
          {"cpus", std::thread::hardware_concurrency()},
          {"load_average", {load[0], load[1], load[2]}},
          {"page_bytes", sysconf(_SC_PAGESIZE)},
          {"memory_bytes", static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE)},
          {"glibc", gnu_get_libc_version()},
          {"compiler", __VERSION__},
          {"time_utc", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(now)))}};
}

}  // namespace lab
