#pragma once

#include <string>

#include "scenarios/scenario.hpp"

namespace lab {

// Many loaders of one class each (hidden classes, lambda forms, reflection accessors): what a
// loader costs when it holds almost nothing.
class MicroScenario : public Scenario {
 public:
  std::string name() const override { return "micro"; }
  std::string description() const override {
    return "many one-class loaders (hidden-class style): committed and waste per loader";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;

  std::size_t loaders = 10000;
  std::size_t load_steps = 5;
  std::size_t unload_steps = 5;
};

}  // namespace lab
