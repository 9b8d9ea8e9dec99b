#include "output/csv_output.hpp"

#include <fstream>
#include <set>
#include <stdexcept>

namespace lab {
namespace {

std::string cell(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

void write_csv(const RunResult& result, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);

  std::vector<std::pair<std::string, const std::vector<Sample>*>> series;
  for (const auto& b : result.backends) series.emplace_back(b.name, &b.samples);
  for (const auto& r : result.references) series.emplace_back(r.name, &r.samples);

  std::set<std::string> extra_keys;
  for (const auto& [name, samples] : series)
    for (const auto& s : *samples)
      for (const auto& [k, v] : s.extra.items()) extra_keys.insert(k);

  out << "scenario,backend,phase,step,live,used,committed,footprint,rss,mappings,elapsed_ns";
  for (const auto& k : extra_keys) out << ',' << k;
  out << '\n';
  for (const auto& [name, samples] : series) {
    for (const auto& s : *samples) {
      out << result.scenario << ',' << name << ',' << s.phase << ',' << s.step << ',' << s.live << ',' << s.used << ','
          << s.committed << ',' << s.footprint << ',' << s.rss << ',' << s.mappings << ',' << s.elapsed_ns;
      for (const auto& k : extra_keys) out << ',' << (s.extra.contains(k) ? cell(s.extra[k]) : "");
      out << '\n';
    }
  }
}

}  // namespace lab
