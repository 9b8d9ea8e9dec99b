#include "hotspot_reference.hpp"

#include <fmt/format.h>

#include <algorithm>
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
  ref.source = "measured: Temurin 25.0.3 -Xshare:off (docs/hotspot-measured.md)";
  std::string line;
  std::vector<std::string> header;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    if (header.empty()) {
      header = split(line);
      continue;
    }
    const auto f = split(line);
    if (f.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: {} fields, the header has {}", csv_path, line_number, f.size(),
                                           header.size()));
    // Columns by name, so that the file may gain or reorder columns.
    auto field = [&](const char* name) -> const std::string& {
      auto it = std::find(header.begin(), header.end(), name);
      if (it == header.end()) throw std::runtime_error(fmt::format("{}: no column '{}'", csv_path, name));
      return f[static_cast<std::size_t>(it - header.begin())];
    };
    auto mib = [&](const char* name) { return static_cast<std::size_t>(std::stod(field(name)) * kMiB); };
    Sample s;
    s.phase = field("phase");
    s.step = std::stoi(field("step"));
    s.used = mib("used_mb");
    s.live = s.used;  // the JVM's own used: this series has no workload live of its own
    s.committed = mib("committed_mb");
    s.footprint = s.committed;
    s.rss = mib("rss_mb");
    s.extra = {{"classes", std::stoul(field("loaded_classes"))},
               {"loaders", std::stoul(field("live_loaders"))},
               {"class_used", mib("ccs_used_mb")},
               {"class_committed", mib("ccs_committed_mb")},
               {"rss_is_whole_jvm", true}};
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
