#pragma once

#include <string>

#include "scenarios/scenario.hpp"

namespace lab {

// The measured HotSpot workload: loaders load their classes round-robin (their chunks interleave),
// then die in random order in a few steps, optionally followed by a second load-and-release spike
// into the holes. A fragmenting allocator keeps memory committed long after the loaders died.
class InterleavedScenario : public Scenario {
 public:
  std::string name() const override { return "interleaved"; }
  std::string description() const override {
    return "loaders load classes round-robin, then die in random order in steps (HotSpot's measured workload)";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::vector<std::string> verdict(const RunResult& result) const override;
  std::optional<double> elastic_goal() const override { return 1.05; }
  bool shows_hotspot_reference() const override { return true; }

  std::size_t loaders = 40;
  std::size_t classes_per_loader = 1000;
  std::size_t load_steps = 5;
  std::size_t unload_steps = 5;
  bool spike = false;
  std::string loader_kind = "standard";
};

}  // namespace lab
