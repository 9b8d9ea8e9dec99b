#include "scenarios/replay.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include "output/units.hpp"
#include "trace/trace_player.hpp"
#include "trace/trace_reader.hpp"

namespace lab {
namespace {

// Marker figures that are HotSpot's own, copied into the sample as hotspot_<key>.
constexpr const char* kHotSpotKeys[] = {"committed", "used", "class_committed", "class_used", "reported_committed",
                                        "reported_used"};

}  // namespace

void ReplayScenario::add_flags(ParamSet& params) {
  params.add("--trace", trace, "the trace to replay (plain or .gz)");
  params.add("--max-samples", max_samples,
             "thin the samples beyond this many (each further max-samples keep every 2nd, 4th, ... candidate)");
  params.add("--sample-every", sample_every, "also sample every N events (0: only at deaths and markers)",
             {.max = UINT64_MAX});
}

void ReplayScenario::validate() const {
  if (max_samples == 0) throw std::invalid_argument("--max-samples must be at least 1");
  if (trace.empty()) throw std::invalid_argument("replay needs a trace: metaspace-lab replay TRACE");
  if (!std::filesystem::exists(trace)) throw std::invalid_argument("--trace: no such file: " + trace);
}

void ReplayScenario::run(ScenarioContext& ctx) const {
  // The reader's buffers exist before the backend, so they are part of the RSS baseline.
  TraceReader reader(trace);
  auto backend = ctx.make_backend(ctx.options);
  TracePlayer player(*backend);
  std::uint64_t events = 0;
  std::map<std::string, int> steps;
  bool deaths_pending = false;

  // A marker's step is its GC id where the log gave one (`gc 73` is the log's GC(73)), otherwise
  // the count of samples with that phase so far.
  std::uint64_t candidates = 0, kept = 0, thinned = 0, stride = 1;
  auto sample = [&](const std::string& phase, nlohmann::json extra = nlohmann::json::object(),
                    std::optional<std::uint64_t> id = std::nullopt) {
    const bool always = phase == "start" || phase == "end";
    if (!always && candidates++ % stride != 0) {
      ++thinned;
      if (phase != "events") ++steps[phase];  // the steps still count the points passed
      return;
    }
    if (!always && ++kept % max_samples == 0) stride *= 2;
    extra["thinned_samples"] = thinned;
    extra["loaders"] = player.live_loaders();
    extra["events"] = events;
    extra["skipped_frees"] = player.skipped_frees();
    const int step = id ? static_cast<int>(*id) : phase == "start" || phase == "end" ? 0 : ++steps[phase];
    ctx.recorder.sample(*backend, phase, step, player.live_bytes(), std::move(extra));
  };
  auto end_of_unloading = [&] {
    deaths_pending = false;
    backend->purge();
    sample("unload");
  };

  ctx.recorder.restart_clock();
  sample("start");
  TraceEvent e;
  while (reader.next(e)) {
    if (deaths_pending && e.type != TraceEvent::Type::dies) end_of_unloading();
    if (e.type == TraceEvent::Type::marker) {
      nlohmann::json extra = nlohmann::json::object();
      for (const char* key : kHotSpotKeys)
        if (e.has_figure(key)) extra[std::string("hotspot_") + key] = e.figure(key);
      sample(e.label, std::move(extra),
             e.has_figure("gc") ? std::optional<std::uint64_t>(e.figure("gc")) : std::nullopt);
    } else {
      player.apply(e, reader);
      deaths_pending = e.type == TraceEvent::Type::dies;
    }
    ++events;
    if (sample_every != 0 && events % sample_every == 0) sample("events");
  }
  if (deaths_pending) end_of_unloading();
  sample("end");
}

std::string ReplayScenario::summary(const RunResult& result) const {
  std::string out;
  for (const auto& b : result.backends) {
    if (b.samples.empty()) continue;
    std::uint64_t ns = 0;
    for (const auto& s : b.samples) ns += s.elapsed_ns;
    const auto& last = b.samples.back();
    const std::uint64_t events = last.extra.value("events", std::uint64_t{0});
    const double seconds = static_cast<double>(ns) / 1e9;
    out += fmt::format("{}: {} events in {:.3f} s = {:.2f} M events/s{}\n", b.name, events, seconds,
                       seconds > 0 ? static_cast<double>(events) / seconds / 1e6 : 0.0,
                       last.extra.value("skipped_frees", 0) ? fmt::format(", {} frees of unknown allocations skipped",
                                                                          last.extra["skipped_frees"].dump())
                                                            : "");
  }
  return out;
}

std::vector<std::string> ReplayScenario::verdict(const RunResult& result) const {
  std::vector<std::string> lines;
  // What no allocator that keeps blocks in place could beat here: found by run_replays in the pass
  // that checked the trace, or read here (a caller that did not check it; if the trace cannot be
  // read, the line says why).
  try {
    std::optional<PlacementFloor::Point> found = floor;
    if (!found && !trace.empty()) found = placement_floor(trace);
    if (found)
      lines.push_back(fmt::format("placement floor of the trace (docs/placement-bound.md): {} at '{}' "
                                  "({} memory + {} loader objects and dead handles)",
                                  format_ratio3(found->with_bookkeeping), found->label, format_ratio3(found->memory),
                                  format_ratio3(found->bookkeeping())));
  } catch (const std::exception& e) {
    lines.push_back(fmt::format("placement floor of the trace: not computed ({})", e.what()));
  }
  const ReferenceSeries hotspot = hotspot_series(result);
  if (hotspot.samples.empty()) return lines;
  for (const auto& b : result.backends) {
    if (!b.error.empty()) continue;
    double worst = 0;
    std::string worst_at;
    int above_hotspot = 0;
    for (const auto& h : hotspot.samples) {
      for (const auto& s : b.samples) {
        if (s.phase != h.phase || s.step != h.step) continue;
        const double r = ratio(s.footprint, s.live);
        if (r > worst) worst = r, worst_at = fmt::format("{} {}", s.phase, s.step);
        if (s.footprint > h.committed) ++above_hotspot;
      }
    }
    lines.push_back(fmt::format("{}: where the trace has HotSpot's figures ({} points), max footprint/live {}x ({}); "
                                "above HotSpot's committed at {} of them",
                                b.name, hotspot.samples.size(), format_ratio(worst), worst_at, above_hotspot));
  }
  double own = 0, to_live = 0;
  for (const auto& h : hotspot.samples) {
    own = std::max(own, ratio(h.committed, h.used));
    to_live = std::max(to_live, ratio(h.committed, h.live));
  }
  lines.push_back(fmt::format("hotspot itself at those points: max committed/used (its own ratio) {}x, "
                              "max committed / the trace's live {}x",
                              format_ratio(own), format_ratio(to_live)));
  return lines;
}

std::optional<PlacementFloor::Point> check_trace(const std::string& path) {
  try {
    return placement_floor(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

ReferenceSeries hotspot_series(const RunResult& result) {
  ReferenceSeries series;
  series.name = "hotspot";
  series.source = "HotSpot's own figures from the trace's markers";
  for (const auto& b : result.backends) {
    if (b.samples.empty()) continue;
    for (const auto& s : b.samples) {
      if (!s.extra.contains("hotspot_committed")) continue;
      Sample h;
      h.phase = s.phase;
      h.step = s.step;
      h.live = s.live;
      h.committed = s.extra["hotspot_committed"].get<std::size_t>();
      h.footprint = h.committed;
      h.used = s.extra.value("hotspot_used", std::size_t{0});
      h.extra = {{"loaders", s.extra.value("loaders", 0)}};
      series.samples.push_back(std::move(h));
    }
    break;  // every backend replays the same markers
  }
  return series;
}

}  // namespace lab
