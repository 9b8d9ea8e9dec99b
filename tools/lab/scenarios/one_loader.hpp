#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.hpp"

namespace lab {

// One big loader, once per class alignment: what aligning every Klass (for a larger narrow-pointer
// shift, as compact object headers do) costs in class space, and how many bits a narrow class
// pointer then needs.
class OneLoaderScenario : public Scenario {
 public:
  std::string name() const override { return "one-loader"; }
  std::string description() const override {
    return "one loader loads many classes, once per class alignment: class-space cost and narrow pointer bits";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;

  std::size_t classes = 40000;
  std::vector<std::size_t> alignments = {8, 512, 1024};
  std::string loader_kind = "standard";
};

}  // namespace lab
