#include "hotspot_reference.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "file_locator.hpp"

namespace lab {
namespace {

constexpr const char* kFileName = "hotspot-jdk25-noshare-interleaved.csv";
constexpr double kMiB = 1024.0 * 1024.0;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) out.push_back(field);
  return out;
}

}  // namespace

ReferenceSeries load_hotspot_reference(const std::string& csv_path) {
  std::ifstream in(csv_path);
  if (!in) throw std::runtime_error("cannot read HotSpot reference data " + csv_path);
  ReferenceSeries ref;
  ref.name = "hotspot-25";
  ref.source = "measured: Temurin 25.0.3 -Xshare:off (shared/reference/hotspot-measured.md)";
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    auto f = split(line);
    if (f.size() != 9) throw std::runtime_error("malformed line in " + csv_path + ": " + line);
    Sample s;
    s.phase = f[0];
    s.step = std::stoi(f[1]);
    s.used = static_cast<std::size_t>(std::stod(f[4]) * kMiB);
    s.live = s.used;
    s.committed = static_cast<std::size_t>(std::stod(f[5]) * kMiB);
    s.rss = static_cast<std::size_t>(std::stod(f[8]) * kMiB);
    s.extra = {{"classes", std::stoul(f[2])},
               {"loaders", std::stoul(f[3])},
               {"class_used", static_cast<std::size_t>(std::stod(f[6]) * kMiB)},
               {"class_committed", static_cast<std::size_t>(std::stod(f[7]) * kMiB)}};
    ref.samples.push_back(std::move(s));
  }
  return ref;
}

std::string find_hotspot_reference(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  for (const auto& dir : data_search_dirs("tools/lab/data")) {
    auto p = dir / kFileName;
    if (std::filesystem::exists(p)) return p.string();
  }
  return {};
}

}  // namespace lab
