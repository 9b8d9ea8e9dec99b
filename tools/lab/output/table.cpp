#include "output/table.hpp"

#include <fmt/format.h>

#include <optional>

#include "output/units.hpp"

namespace lab {
namespace {

// A scenario that measures a step several times (threads: --repeat) marks the runs after the
// first with extra["repeat"]; without it their rows would repeat the first run's figures.
std::size_t repeat_of(const Sample& s) { return s.extra.value("repeat", std::size_t{0}); }

std::string step_label(const Sample& s) {
  return repeat_of(s) == 0 ? fmt::format("{} {}", s.phase, s.step)
                           : fmt::format("{} {} #{}", s.phase, s.step, repeat_of(s) + 1);
}

std::string describe_settings(const nlohmann::json& settings) {
  std::string out;
  // The settings that tell the variants apart; the JSON has all of them.
  for (const char* key : {"library", "allocator", "reclaim", "commit_granule_bytes", "class_alignment_bytes",
                          "trim_after_unload", "loader"}) {
    if (!settings.contains(key)) continue;
    const auto& v = settings[key];
    out += fmt::format("{}{}={}", out.empty() ? "" : ", ", key, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

std::string format_block(const std::string& title, const std::vector<Sample>& samples) {
  std::string out = title + "\n";
  out += fmt::format("  {:<10} {:>4} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>6} {:>9}\n", "phase",
                     "step", "classes", "loaders", "live MiB", "used MiB", "comm MiB", "foot MiB", "comm/live",
                     "foot/live", "RSS MiB", "maps", "time ms");
  for (const auto& s : samples) {
    out += fmt::format("  {:<10} {:>4} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>6} {:>9}\n",
                       s.phase, s.step, s.extra.contains("classes") ? s.extra["classes"].dump() : "",
                       s.extra.contains("loaders") ? s.extra["loaders"].dump() : "", mib(s.live), mib(s.used),
                       mib(s.committed), mib(s.footprint), format_ratio(ratio(s.committed, s.live)),
                       format_ratio(ratio(s.footprint, s.live)), mib(s.rss),
                       s.mappings ? std::to_string(s.mappings) : "",
                       // Reference series carry no timings.
                       s.elapsed_ns ? fmt::format("{:.1f}", static_cast<double>(s.elapsed_ns) / 1e6) : "");
  }
  return out;
}

const Sample* find_step(const std::vector<Sample>& samples, const Sample& like) {
  for (const auto& s : samples)
    if (s.phase == like.phase && s.step == like.step && repeat_of(s) == repeat_of(like)) return &s;
  return nullptr;
}

}  // namespace

std::string format_step_tables(const RunResult& result) {
  std::string out;
  for (const auto& b : result.backends) {
    std::string title = fmt::format("{} — {}", b.name, describe_settings(b.settings));
    out += format_block(title, b.samples);
    if (!b.error.empty()) out += fmt::format("  FAILED: {}\n", b.error);
    out += "\n";
  }
  for (const auto& r : result.references) {
    out += format_block(fmt::format("{} — {} (footprint = its committed{})", r.name, r.source,
                                    r.samples.empty() || r.samples[0].live == r.samples[0].used
                                        ? "; live = its own used"
                                        : "; live = the trace's"),
                        r.samples);
    out += "\n";
  }
  return out;
}

std::string format_side_by_side(const RunResult& result) {
  // The rows: the first backend with samples sets the steps.
  const std::vector<Sample>* rows = nullptr;
  for (const auto& b : result.backends)
    if (!b.samples.empty()) {
      rows = &b.samples;
      break;
    }
  if (!rows) return {};

  std::vector<std::pair<std::string, const std::vector<Sample>*>> columns;
  for (const auto& b : result.backends) columns.emplace_back(b.name, &b.samples);
  for (const auto& r : result.references) columns.emplace_back(r.name, &r.samples);

  auto matrix = [&](const std::string& title, auto&& cell) {
    std::string out = fmt::format("{:<19}", title);
    for (const auto& [name, samples] : columns) out += fmt::format(" {:>12}", name);
    out += "\n";
    for (const auto& row : *rows) {
      out += fmt::format("{:<19}", step_label(row));
      for (const auto& [name, samples] : columns) {
        const Sample* s = find_step(*samples, row);
        out += fmt::format(" {:>12}", s ? cell(*s) : std::string("-"));
      }
      out += "\n";
    }
    return out;
  };
  std::string out = matrix("foot/live", [](const Sample& s) { return format_ratio(ratio(s.footprint, s.live)); });
  out += "\n";
  out += matrix("comm/live", [](const Sample& s) { return format_ratio(ratio(s.committed, s.live)); });
  out += "\n";
  out += matrix("footprint MiB", [](const Sample& s) { return mib(s.footprint); });
  out += "\n";
  out += matrix("RSS MiB", [](const Sample& s) { return mib(s.rss); });
  return out;
}

}  // namespace lab
