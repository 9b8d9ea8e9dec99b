#include "output/trace_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "output/units.hpp"
#include "output/verdict.hpp"
#include "scenarios/replay.hpp"

namespace lab {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The ratios num/den over the samples whose den is at least 1 % of the largest.
template <typename Num, typename Den>
std::vector<double> ratios(const std::vector<Sample>& samples, Num num, Den den) {
  std::size_t peak = 0;
  for (const auto& s : samples) peak = std::max(peak, den(s));
  std::vector<double> out;
  for (const auto& s : samples)
    if (den(s) > 0 && den(s) * 100 >= peak) out.push_back(ratio(num(s), den(s)));
  return out;
}

double max_of(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

nlohmann::json number(double v) { return v == v ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

void TraceSummary::add(const std::string& trace, const RunResult& result) {
  const ReferenceSeries hs = hotspot_series(result);
  const Sample* hotspot_worst = nullptr;
  for (const auto& h : hs.samples)
    if (h.live > 0 && (!hotspot_worst || ratio(h.committed, h.live) > ratio(hotspot_worst->committed,
                                                                             hotspot_worst->live)))
      hotspot_worst = &h;
  if (!hs.samples.empty()) {
    auto own = ratios(hs.samples, [](const Sample& s) { return s.committed; }, [](const Sample& s) { return s.used; });
    auto live = ratios(hs.samples, [](const Sample& s) { return s.committed; }, [](const Sample& s) { return s.live; });
    hotspot.push_back({trace, max_of(own), median_of(own), max_of(live), hs.samples.size()});
  }
  for (const auto& b : result.backends) {
    TraceSummaryRow row;
    row.trace = trace;
    row.backend = b.name;
    row.error = b.error;
    row.peak_live = peak_live(result);
    auto r = ratios(b.samples, [](const Sample& s) { return s.footprint; }, [](const Sample& s) { return s.live; });
    row.max_footprint_live = max_of(r);
    row.median_footprint_live = median_of(r);
    // The sample of the max (the verdict's, by the same 1 % rule), split into its two parts.
    row.committed_at_max = row.overhead_at_max = NAN;
    if (const auto worst = max_ratio(b.samples)) {
      const Sample& s = *worst->sample;
      row.committed_at_max = ratio(s.committed, s.live);
      row.overhead_at_max = ratio(s.footprint - std::min(s.footprint, s.committed), s.live);
    }
    row.at_hotspot_worst = NAN;
    if (hotspot_worst)
      for (const auto& s : b.samples)
        if (s.phase == hotspot_worst->phase && s.step == hotspot_worst->step) row.at_hotspot_worst = ratio(s.footprint, s.live);
    std::size_t peak_at = 0;
    for (std::size_t i = 0; i < b.samples.size(); ++i)
      if (b.samples[i].rss > row.peak_rss) row.peak_rss = b.samples[i].rss, peak_at = i;
    row.valley_rss = row.peak_rss;
    for (std::size_t i = peak_at; i < b.samples.size(); ++i) row.valley_rss = std::min(row.valley_rss, b.samples[i].rss);
    rows.push_back(std::move(row));
  }
}

void TraceSummary::add_floor(const std::string& trace, const PlacementFloor::Point& worst) {
  floors.push_back({trace, worst});
}

const TraceFloor* TraceSummary::floor_of(const std::string& trace) const {
  for (const auto& f : floors)
    if (f.trace == trace) return &f;
  return nullptr;
}

std::string TraceSummary::format() const {
  // The verdict first, then the table it is drawn from.
  std::string out = goal_line();
  if (!out.empty()) out += "\n";
  out += fmt::format("{:<26} {:<12} {:>9} {:>10} {:>12} {:>9} {:>10} {:>9} {:>10}\n", "trace", "backend",
                     "max f/l", "= memory", "+ bookkeep.", "median", "at HS max", "peak RSS", "valley RSS");
  std::string last;
  for (const auto& r : rows) {
    if (r.trace != last && !last.empty()) out += "\n";
    last = r.trace;
    out += fmt::format("{:<26} {:<12} {:>9} {:>10} {:>12} {:>9} {:>10} {:>9} {:>10}{}\n", r.trace, r.backend,
                       format_ratio3(r.max_footprint_live), format_ratio3(r.committed_at_max), format_ratio3(r.overhead_at_max),
                       format_ratio3(r.median_footprint_live), format_ratio3(r.at_hotspot_worst), mib(r.peak_rss),
                       mib(r.valley_rss), r.error.empty() ? "" : "  FAILED: " + r.error);
    const bool last_of_trace = &r == &rows.back() || (&r + 1)->trace != r.trace;
    if (last_of_trace)
      for (const auto& h : hotspot)
        if (h.trace == r.trace)
          out += fmt::format("{:<26} {:<12} {:>9} {:>10} {:>12} {:>9} {:>10}   (HotSpot's own committed/used at {} "
                             "points; committed/live max {})\n",
                             r.trace, "hotspot", format_ratio3(h.max_own), "", "", format_ratio3(h.median_own), "-", h.points,
                             format_ratio3(h.max_live));
    if (last_of_trace)
      if (const TraceFloor* f = floor_of(r.trace))
        out += fmt::format("{:<26} {:<12} {:>9} {:>10} {:>12}   (placement floor, at '{}')\n",
                           r.trace, "floor", format_ratio3(f->worst.with_bookkeeping),
                           format_ratio3(f->worst.memory), format_ratio3(f->worst.bookkeeping()), f->worst.label);
  }
  out += "f/l = footprint/live (samples with live >= 1 % of the trace's peak), at its worst sample = memory "
         "(committed/live) + bookkeeping (the library's overhead/live); at HS max = at the marker where "
         "HotSpot's committed/live is highest; RSS in MiB above the process's baseline; floor = the least "
         "footprint/live an allocator that keeps blocks in place and cannot foresee deaths can expect "
         "(docs/placement-bound.md)\n";
  return out;
}

std::string TraceSummary::markdown() const {
  std::vector<std::string> traces, backends;
  for (const auto& r : rows) {
    if (std::find(traces.begin(), traces.end(), r.trace) == traces.end()) traces.push_back(r.trace);
    if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
  }
  std::string out = "Worst footprint/live (samples with live >= 1 % of the trace's peak):\n\n| trace |";
  for (const auto& b : backends) out += " " + b + " |";
  out += " HotSpot committed/used | HotSpot committed / trace live | placement floor |\n|---|";
  for (std::size_t i = 0; i < backends.size() + 3; ++i) out += "---:|";
  out += "\n";
  for (const auto& t : traces) {
    out += "| " + t + " |";
    for (const auto& b : backends) {
      std::string cell = "-";
      for (const auto& r : rows)
        if (r.trace == t && r.backend == b) cell = r.error.empty() ? format_ratio3(r.max_footprint_live) : "failed";
      out += " " + cell + " |";
    }
    std::string own = "-", live = "-";
    for (const auto& h : hotspot)
      if (h.trace == t) own = format_ratio3(h.max_own), live = format_ratio3(h.max_live);
    const TraceFloor* f = floor_of(t);
    out += " " + own + " | " + live + " | " + (f ? format_ratio3(f->worst.with_bookkeeping) : "-") + " |\n";
  }
  out += "\n" + goal_line();
  out += "\nPer trace and backend (f/l = footprint/live, at its worst sample = memory (committed/live) + "
         "bookkeeping (the library's overhead/live); at HS max: where HotSpot's committed/live is highest; "
         "RSS in MiB above the process's baseline):\n\n"
         "| trace | backend | max f/l | = memory | + bookkeeping | median f/l | at HS max | peak RSS | valley RSS |\n"
         "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : rows)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.trace, r.backend,
                       format_ratio3(r.max_footprint_live), format_ratio3(r.committed_at_max), format_ratio3(r.overhead_at_max),
                       format_ratio3(r.median_footprint_live), format_ratio3(r.at_hotspot_worst), mib(r.peak_rss),
                       mib(r.valley_rss));
  return out;
}

namespace {

// A missed trace's figure, with as many decimals as it takes not to read as meeting the goal: at
// three, ml-10-20-60's 1.0504 printed as "1.050" in the line that says it is above 1.05.
std::string format_missed(double r) {
  std::string s = format_ratio3(r);
  return std::stod(s) > kRealTraceGoal ? s : fmt::format("{:.4f}", r);
}

}  // namespace

std::string TraceSummary::goal_line() const {
  std::string missed, small;
  std::size_t judged = 0;
  for (const auto& r : rows) {
    if (r.backend != "elastic" || !r.error.empty() || r.max_footprint_live != r.max_footprint_live) continue;
    if (r.peak_live < kTooSmallToJudgeBytes) {
      small += fmt::format("{}{} (peak live {:.0f} KiB)", small.empty() ? "" : ", ", r.trace,
                           static_cast<double>(r.peak_live) / 1024.0);
      continue;
    }
    ++judged;
    if (r.max_footprint_live <= kRealTraceGoal) continue;
    std::string floor;
    if (const TraceFloor* f = floor_of(r.trace))
      floor = fmt::format(" (floor {}{})", format_ratio3(f->worst.with_bookkeeping),
                          f->worst.with_bookkeeping > kRealTraceGoal ? ": above the goal itself" : "");
    missed += fmt::format("{}{} {}{}", missed.empty() ? "" : ", ", r.trace, format_missed(r.max_footprint_live), floor);
  }
  std::string out;
  if (judged > 0)
    out = missed.empty() ? fmt::format("elastic: footprint/live <= {:.2f} at every sample of all {} traces judged\n",
                                       kRealTraceGoal, judged)
                         : fmt::format("elastic above the goal (footprint/live <= {:.2f} at every sample): {}\n",
                                       kRealTraceGoal, missed);
  if (!small.empty())
    out += fmt::format("too small to judge (peak live < {} KiB): {}\n", kTooSmallToJudgeBytes / 1024, small);
  return out;
}

nlohmann::json TraceSummary::to_json() const {
  nlohmann::json j = {{"schema_version", kSchemaVersion}, {"rows", nlohmann::json::array()},
                      {"hotspot", nlohmann::json::array()}};
  for (const auto& r : rows)
    j["rows"].push_back({{"trace", r.trace},
                         {"backend", r.backend},
                         {"max_footprint_live", number(r.max_footprint_live)},
                         {"median_footprint_live", number(r.median_footprint_live)},
                         {"at_hotspot_worst", number(r.at_hotspot_worst)},
                         {"committed_live_at_max", number(r.committed_at_max)},
                         {"overhead_live_at_max", number(r.overhead_at_max)},
                         {"peak_rss", r.peak_rss},
                         {"valley_rss", r.valley_rss},
                         {"error", r.error}});
  j["placement_floor"] = nlohmann::json::array();
  for (const auto& f : floors)
    j["placement_floor"].push_back({{"trace", f.trace},
                                    {"with_bookkeeping", number(f.worst.with_bookkeeping)},
                                    {"memory", number(f.worst.memory)},
                                    {"marker", f.worst.label}});
  for (const auto& h : hotspot)
    j["hotspot"].push_back({{"trace", h.trace},
                            {"max_committed_used", number(h.max_own)},
                            {"median_committed_used", number(h.median_own)},
                            {"max_committed_live", number(h.max_live)},
                            {"points", h.points}});
  return j;
}

std::vector<std::string> expand_traces(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    std::error_code ec;
    if (std::filesystem::is_directory(name, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(name, ec)) {
        const std::string p = entry.path().string();
        if (entry.is_regular_file() && (ends_with(p, ".trace") || ends_with(p, ".trace.gz"))) found.push_back(p);
      }
      if (found.empty()) throw std::invalid_argument("TRACE: no *.trace or *.trace.gz file in the folder " + name);
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (std::filesystem::is_regular_file(name, ec)) {
      out.push_back(name);
    } else {
      throw std::invalid_argument("TRACE: no such file or folder: " + name);
    }
  }
  return out;
}

std::string trace_stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* suffix : {".gz", ".trace"})
    if (ends_with(name, suffix)) name.resize(name.size() - std::string(suffix).size());
  return name.empty() ? "trace" : name;
}

}  // namespace lab
