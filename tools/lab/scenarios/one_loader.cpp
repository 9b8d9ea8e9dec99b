#include "scenarios/one_loader.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "output/units.hpp"
#include "simulated_loader.hpp"

namespace lab {
namespace {

// Class-space bytes per class beyond the Klass itself: alignment gaps plus the free tail of the
// chunks. The library may fill gaps with non-class blocks (as HotSpot does), so this is room, not
// necessarily loss. Only backends with a class space of their own can say.
std::string class_room_per_class(const Sample& s) {
  const auto& x = s.extra;
  if (!x.contains("class_committed") || !x.contains("klass_bytes") || !x.contains("classes")) return "n/a";
  return fmt::format("{:.0f}", (x["class_committed"].get<double>() - x["klass_bytes"].get<double>()) /
                                   x["classes"].get<double>());
}

// What the alignment really costs: committed memory per class beyond the run with the smallest
// alignment (same classes, same backend).
std::string loss_per_class(const Sample& s, const Sample& smallest) {
  return fmt::format("{:.0f}", (static_cast<double>(s.committed) - static_cast<double>(smallest.committed)) /
                                   s.extra.value("classes", 1.0));
}

}  // namespace

void OneLoaderScenario::add_flags(ParamSet& params) {
  params.add("--classes", classes, "classes the loader loads");
  params.add("--alignments", alignments, "class alignments in bytes, comma separated (powers of 2, 8..1024)");
  params.add("--loader-kind", loader_kind, "boot, standard or micro");
}

void OneLoaderScenario::validate() const {
  if (classes == 0) throw std::invalid_argument("--classes must be at least 1");
  if (alignments.empty()) throw std::invalid_argument("--alignments needs at least one alignment");
  for (auto a : alignments)
    if (a < 8 || a > 1024 || (a & (a - 1)) != 0)
      throw std::invalid_argument(fmt::format("--alignments: {} is not a power of 2 between 8 and 1024", a));
  parse_loader_kind(loader_kind);
}

void OneLoaderScenario::run(ScenarioContext& ctx) const {
  const LoaderKind kind = parse_loader_kind(loader_kind);
  ctx.progress.set_total(alignments.size() * classes);
  for (std::size_t alignment : alignments) {
    BackendOptions options = ctx.options;
    options.class_alignment_bytes = alignment;
    auto backend = ctx.make_backend(options);
    // The same classes for every alignment, so that only the alignment differs.
    Workload workload(ctx.workload);
    ClassShape shape;
    SimulatedLoader loader(*backend, kind);
    ctx.recorder.restart_clock();
    for (std::size_t c = 0; c < classes; ++c) {
      workload.next_class(shape);
      loader.load(shape);
      ctx.progress.advance();
    }
    nlohmann::json extra = {{"class_alignment", alignment}, {"classes", classes},
                            {"klass_bytes", loader.klass_bytes()}};
    if (auto bits = backend->narrow_class_bits()) extra["narrow_class_bits"] = *bits;
    ctx.recorder.sample(*backend, "loaded", static_cast<int>(alignment), loader.live_bytes(), extra);
  }
}

std::string OneLoaderScenario::summary(const RunResult& result) const {
  std::string out = fmt::format("{:<14} {:>6} {:>15} {:>17} {:>16} {:>12} {:>14} {:>10}\n", "backend", "align",
                                "class comm MiB", "class room/class", "loss/class B", "narrow bits", "committed MiB",
                                "comm/live");
  for (const auto& run : result.backends) {
    const Sample* smallest = nullptr;
    for (const auto& s : run.samples)
      if (s.phase == "loaded" && (!smallest || s.step < smallest->step)) smallest = &s;
    for (const auto& s : run.samples) {
      if (s.phase != "loaded") continue;
      const auto& x = s.extra;
      out += fmt::format("{:<14} {:>6} {:>15} {:>17} {:>16} {:>12} {:>14} {:>10}\n", run.name, s.step,
                         x.contains("class_committed") ? mib(x["class_committed"].get<std::size_t>()) : "n/a",
                         class_room_per_class(s), loss_per_class(s, *smallest),
                         x.contains("narrow_class_bits") ? std::to_string(x["narrow_class_bits"].get<unsigned>()) : "n/a",
                         mib(s.committed), format_ratio(ratio(s.committed, s.live)));
    }
  }
  out += "class room/class: class-space bytes per class beyond its Klass (gaps may hold non-class blocks);\n"
         "loss/class: committed bytes per class beyond the same backend's run at the smallest alignment.\n";
  return out;
}

}  // namespace lab
