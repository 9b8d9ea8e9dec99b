#include "scenarios/micro.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "output/units.hpp"
#include "scenarios/loader_group.hpp"

namespace lab {
namespace {

constexpr std::uint64_t kOrderStream = 0x3C60;

}  // namespace

void MicroScenario::add_flags(ParamSet& params) {
  params.add("--loaders", loaders, "number of one-class loaders");
  params.add("--load-steps", load_steps, "samples taken while loading");
  params.add("--unload-steps", unload_steps, "steps in which the loaders are released");
}

void MicroScenario::validate() const {
  if (loaders == 0) throw std::invalid_argument("--loaders must be at least 1");
  if (load_steps == 0 || load_steps > loaders) throw std::invalid_argument("--load-steps must be between 1 and --loaders");
  if (unload_steps == 0 || unload_steps > loaders)
    throw std::invalid_argument("--unload-steps must be between 1 and --loaders");
}

void MicroScenario::run(ScenarioContext& ctx) const {
  auto backend = ctx.make_backend(ctx.options);
  LoaderGroup group(*backend, LoaderKind::micro);
  Workload workload(ctx.workload);
  Random order(ctx.workload.seed ^ kOrderStream);
  ClassShape shape;
  ctx.progress.set_total(2 * loaders);

  ctx.recorder.restart_clock();
  group.sample(ctx.recorder, "start", 0);
  std::size_t begin = 0;
  int step = 1;
  for (std::size_t end : batch_ends(loaders, load_steps)) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t index = group.add(1);
      workload.next_micro_class(shape);
      group.load(index, shape);
    }
    ctx.progress.advance(end - begin);
    begin = end;
    group.sample(ctx.recorder, "load", step++);
  }
  group.release_in_steps(unload_steps, order, ctx.recorder, ctx.progress, "unload");
}

std::string MicroScenario::summary(const RunResult& result) const {
  // Per loader at the peak (every loader alive), then what is left once all were released in
  // random order (the "unload" phase): a runtime with many hidden classes pays this per class.
  std::string out = fmt::format("{:<12} {:>7} {:>10} {:>11} {:>11} {:>10} {:>10} {:>13} {:>13}\n", "backend",
                                "loaders", "live/ldr B", "foot/ldr B", "comm/ldr B", "RSS/ldr B", "foot/live",
                                "foot after MiB", "RSS after MiB");
  for (const auto& run : result.backends) {
    const Sample* peak = nullptr;
    for (const auto& s : run.samples)
      if (s.phase == "load") peak = &s;
    if (!peak) continue;
    const Sample& after = run.samples.back();
    const double n = peak->extra.value("loaders", 0.0);
    out += fmt::format("{:<12} {:>7.0f} {:>10.0f} {:>11.0f} {:>11.0f} {:>10.0f} {:>10} {:>13} {:>13}\n", run.name, n,
                       ratio(peak->live, n), ratio(peak->footprint, n), ratio(peak->committed, n),
                       ratio(peak->rss, n), format_ratio(ratio(peak->footprint, peak->live)), mib(after.footprint),
                       mib(after.rss));
  }
  return out;
}

}  // namespace lab
