#include "output/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace lab {

namespace {

template <typename Num, typename Den>
std::optional<MaxRatio> max_of(const std::vector<Sample>& samples, Num num, Den den) {
  std::size_t peak = 0;
  for (const auto& s : samples) peak = std::max(peak, den(s));
  std::optional<MaxRatio> best;
  for (const auto& s : samples) {
    if (den(s) == 0 || den(s) * 100 < peak) continue;
    const double r = static_cast<double>(num(s)) / static_cast<double>(den(s));
    if (!best || r > best->ratio) best = MaxRatio{r, &s};
  }
  return best;
}

}  // namespace

std::optional<MaxRatio> max_ratio(const std::vector<Sample>& samples, bool footprint) {
  return max_of(
      samples, [footprint](const Sample& s) { return footprint ? s.footprint : s.committed; },
      [](const Sample& s) { return s.live; });
}

std::optional<MaxRatio> max_committed_used(const std::vector<Sample>& samples) {
  return max_of(
      samples, [](const Sample& s) { return s.committed; }, [](const Sample& s) { return s.used; });
}

std::size_t peak_live(const RunResult& result) {
  for (const auto& b : result.backends) {
    if (b.samples.empty()) continue;
    std::size_t peak = 0;
    for (const auto& s : b.samples) peak = std::max(peak, s.live);
    return peak;
  }
  return 0;
}

std::vector<std::string> generic_verdict(const RunResult& result, std::optional<double> elastic_goal) {
  std::vector<std::string> lines;
  const std::size_t live_peak = peak_live(result);
  const bool too_small = live_peak < kTooSmallToJudgeBytes;
  auto line = [&](const std::string& what, const std::string& name, std::optional<MaxRatio> m,
                  const std::string& note) {
    if (!m) return;
    std::string goal;
    if (elastic_goal && name.rfind("elastic", 0) == 0)
      goal = too_small ? fmt::format("  goal <= {:.2f}: too small to judge (peak live {:.0f} KiB < {} KiB)",
                                     *elastic_goal, static_cast<double>(live_peak) / 1024.0,
                                     kTooSmallToJudgeBytes / 1024)
                       : fmt::format("  goal <= {:.2f}: {}", *elastic_goal, m->ratio <= *elastic_goal ? "met" : "MISSED");
    // Three decimals: read against a 1.05 goal, 1.0545 must not print as 1.05.
    lines.push_back(fmt::format("max {:<19} {:<12} {:>6.3f}  (at {} {}){}{}", what, name, m->ratio, m->sample->phase,
                                m->sample->step, goal, note));
  };
  for (const auto& b : result.backends)
    line("footprint/live", b.name, max_ratio(b.samples), b.error.empty() ? "" : "  [run failed]");
  for (const auto& r : result.references) {
    line("committed/used", r.name, max_committed_used(r.samples), "  [HotSpot's own figures]");
    bool has_live = false;  // a replay's series carries the trace's live; the measured CSV only HotSpot's used
    for (const auto& s : r.samples) has_live |= s.live != s.used;
    if (has_live)
      line("committed/live", r.name, max_ratio(r.samples, false), "  [HotSpot's committed / the trace's live]");
  }
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
