#include "scenarios/interleaved.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "output/units.hpp"
#include "scenarios/loader_group.hpp"

namespace lab {
namespace {

// Which loaders die together depends on the seed, but drawing the order must not shift the class
// sizes drawn, so it has its own random stream.
constexpr std::uint64_t kOrderStream = 0x0DDE7;

}  // namespace

void InterleavedScenario::add_flags(ParamSet& params) {
  params.add("--loaders", loaders, "number of loaders");
  params.add("--classes-per-loader", classes_per_loader, "classes each loader loads");
  params.add("--load-steps", load_steps, "samples taken while loading");
  params.add("--unload-steps", unload_steps, "steps in which the loaders are released");
  params.add("--spike", spike, "then load as many loaders again, batch by batch, into the holes and release them");
  params.add("--loader-kind", loader_kind, "boot, standard or micro");
}

void InterleavedScenario::validate() const {
  if (loaders == 0) throw std::invalid_argument("--loaders must be at least 1");
  if (classes_per_loader == 0) throw std::invalid_argument("--classes-per-loader must be at least 1");
  if (load_steps == 0 || load_steps > classes_per_loader)
    throw std::invalid_argument("--load-steps must be between 1 and --classes-per-loader");
  if (unload_steps == 0 || unload_steps > loaders)
    throw std::invalid_argument("--unload-steps must be between 1 and --loaders");
  parse_loader_kind(loader_kind);
}

void InterleavedScenario::run(ScenarioContext& ctx) const {
  auto backend = ctx.make_backend(ctx.options);
  LoaderGroup group(*backend, parse_loader_kind(loader_kind));
  Workload workload(ctx.workload);
  Random order(ctx.workload.seed ^ kOrderStream);
  const std::size_t rounds = spike ? 2 : 1;
  ctx.progress.set_total(rounds * loaders * (classes_per_loader + 1));

  ctx.recorder.restart_clock();
  group.sample(ctx.recorder, "start", 0);

  group.add(loaders);
  std::size_t from = 0;
  int step = 1;
  for (std::size_t to : batch_ends(classes_per_loader, load_steps)) {
    group.load_round_robin(workload, 0, loaders, from, to, ctx.progress);
    from = to;
    group.sample(ctx.recorder, "load", step++);
  }
  group.release_in_steps(unload_steps, order, ctx.recorder, ctx.progress, "unload");
  if (!spike) return;

  // The second spike, as in the measured run: each step brings as many new loaders as died per
  // step, loaded round-robin among themselves into the partly freed address space.
  step = 1;
  std::size_t previous = 0;
  for (std::size_t end : batch_ends(loaders, unload_steps)) {
    const std::size_t first = group.add(end - previous);
    previous = end;
    group.load_round_robin(workload, first, group.size(), 0, classes_per_loader, ctx.progress);
    group.sample(ctx.recorder, "reload", step++);
  }
  group.release_in_steps(unload_steps, order, ctx.recorder, ctx.progress, "unload2");
}

}  // namespace lab

namespace lab {
namespace {

const Sample* find(const std::vector<Sample>& samples, const std::string& phase, int step) {
  for (const auto& s : samples)
    if (s.phase == phase && s.step == step) return &s;
  return nullptr;
}

}  // namespace

std::vector<std::string> InterleavedScenario::verdict(const RunResult& result) const {
  std::vector<std::string> lines;
  const BackendRun* elastic = nullptr;
  const BackendRun* no_reclaim = nullptr;
  for (const auto& b : result.backends) {
    if (b.name == "elastic" && b.error.empty()) elastic = &b;
    if (b.name == "no-reclaim" && b.error.empty()) no_reclaim = &b;
  }
  // The telling moment: all loaders but the last batch released (4/5 with the defaults).
  if (unload_steps >= 2) {
    const int step = static_cast<int>(unload_steps) - 1;
    std::string ratios, rss;
    const Sample* e = elastic ? find(elastic->samples, "unload", step) : nullptr;
    for (const auto& b : result.backends) {
      const Sample* s = find(b.samples, "unload", step);
      if (!s) continue;
      ratios += fmt::format("{}{} {}x", ratios.empty() ? "" : ", ", b.name, format_ratio(ratio(s->committed, s->live)));
      if (e && &b != elastic)
        rss += fmt::format("{}{} {}x", rss.empty() ? "" : ", ", b.name, format_ratio(ratio(s->rss, e->rss)));
    }
    for (const auto& r : result.references)
      if (const Sample* s = find(r.samples, "unload", step))
        ratios += fmt::format(", {} {}x (measured)", r.name, format_ratio(ratio(s->committed, s->live)));
    lines.push_back(fmt::format("after releasing {}/{} of the loaders, committed/live: {}", step, unload_steps, ratios));
    if (!rss.empty()) lines.push_back(fmt::format("  and RSS relative to elastic: {}", rss));
    if (e && no_reclaim) {
      if (const Sample* l = find(no_reclaim->samples, "unload", step)) {
        const double r = ratio(l->committed, e->committed);
        lines.push_back(fmt::format("  no-reclaim keeps {}x elastic's committed (goal >= 2: {})", format_ratio(r),
                                    r >= 2 ? "met" : "MISSED"));
      }
    }
  }
  if (elastic) {
    const Sample* start = find(elastic->samples, "start", 0);
    const Sample* end = find(elastic->samples, spike ? "unload2" : "unload", static_cast<int>(unload_steps));
    if (start && end) {
      const double grown = (static_cast<double>(end->rss) - static_cast<double>(start->rss)) / (1024.0 * 1024.0);
      lines.push_back(fmt::format("after releasing everything, elastic keeps {} MiB committed and RSS is {:+.2f} MiB "
                                  "from the start (goal within 5 MiB: {})",
                                  mib(end->committed), grown, grown <= 5.0 ? "met" : "MISSED"));
    }
  }
  return lines;
}

}  // namespace lab
