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

std::vector<std::string> generic_verdict(const RunResult& result, std::optional<double> elastic_goal) {
  std::vector<std::string> lines;
  auto line = [&](const std::string& name, const std::vector<Sample>& samples, const std::string& note) {
    auto m = max_committed_ratio(samples);
    if (!m) return;
    std::string goal;
    if (elastic_goal && name.rfind("elastic", 0) == 0)
      goal = fmt::format("  goal <= {:.2f}: {}", *elastic_goal, m->ratio <= *elastic_goal ? "met" : "MISSED");
    lines.push_back(fmt::format("max committed/live {:<12} {:>6.2f}  (at {} {}){}{}", name, m->ratio, m->sample->phase,
                                m->sample->step, goal, note));
  };
  for (const auto& b : result.backends) line(b.name, b.samples, b.error.empty() ? "" : "  [run failed]");
  for (const auto& r : result.references) line(r.name, r.samples, "  [measured HotSpot, its live = its used]");
  for (const auto& b : result.backends) {
    if (b.samples.empty()) continue;
    const auto shared = b.samples.back().extra.value("jemalloc_shared_arena_loaders", std::size_t{0});
    if (shared > 0)
      lines.push_back(fmt::format("{}: {} loaders found jemalloc's arena limit reached and shared its automatic arenas",
                                  b.name, shared));
  }
  return lines;
}

}  // namespace lab
