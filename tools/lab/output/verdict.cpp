#include "output/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace lab {

std::optional<MaxRatio> max_committed_ratio(const std::vector<Sample>& samples) {
  std::size_t peak = 0;
  for (const auto& s : samples) peak = std::max(peak, s.live);
  std::optional<MaxRatio> best;
  for (const auto& s : samples) {
    if (s.live == 0 || s.live * 100 < peak) continue;
    const double r = static_cast<double>(s.committed) / static_cast<double>(s.live);
    if (!best || r > best->ratio) best = MaxRatio{r, &s};
  }
  return best;
}

std::vector<std::string> generic_verdict(const RunResult& result) {
  std::vector<std::string> lines;
  auto line = [&](const std::string& name, const std::vector<Sample>& samples, const std::string& note) {
    auto m = max_committed_ratio(samples);
    if (!m) return;
    std::string goal;
    if (name.rfind("elastic", 0) == 0)
      goal = m->ratio <= kElasticGoal ? fmt::format("  goal <= {:.2f}: met", kElasticGoal)
                                      : fmt::format("  goal <= {:.2f}: MISSED", kElasticGoal);
    lines.push_back(fmt::format("max committed/live {:<12} {:>6.2f}  (at {} {}){}{}", name, m->ratio, m->sample->phase,
                                m->sample->step, goal, note));
  };
  for (const auto& b : result.backends) line(b.name, b.samples, b.error.empty() ? "" : "  [run failed]");
  for (const auto& r : result.references) line(r.name, r.samples, "  [measured HotSpot, its live = its used]");
  return lines;
}

}  // namespace lab
