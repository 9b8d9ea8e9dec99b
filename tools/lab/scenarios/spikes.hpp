#pragma once

#include <string>

#include "scenarios/scenario.hpp"

namespace lab {

// Two spikes and a valley: load some batches of loaders, unload all but one, load as many again,
// unload everything. Shows whether memory freed in the valley really goes back to the OS.
class SpikesScenario : public Scenario {
 public:
  std::string name() const override { return "spikes"; }
  std::string description() const override {
    return "load batches, unload all but one, load again, unload all: two spikes and a valley";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;
  std::vector<std::string> verdict(const RunResult& result) const override;

  std::size_t batches = 5;
  std::size_t repeat = 3;
  std::size_t loaders_per_batch = 8;
  std::size_t classes_per_loader = 1000;
  std::string loader_kind = "standard";

 private:
  // One whole sequence on `backend`; samples only when `sampled`.
  void play(ScenarioContext& ctx, Backend& backend, bool sampled) const;
};

}  // namespace lab
