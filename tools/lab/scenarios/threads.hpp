#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.hpp"

namespace lab {

// Loading throughput with several threads, each loading into loaders of its own (as parallel
// class loading does): a fresh allocator per thread count.
class ThreadsScenario : public Scenario {
 public:
  std::string name() const override { return "threads"; }
  std::string description() const override {
    return "a fixed number of classes loaded by 1, 2, ... threads, each with its own loaders: throughput";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;
  std::vector<std::string> verdict(const RunResult& result) const override;

  std::size_t classes = 100000;
  std::size_t classes_per_loader = 1000;
  // 1 and 2 by default: this project's machine has two cores, and more threads than cores
  // measures the scheduler rather than the allocator.
  std::vector<std::size_t> thread_counts = {1, 2};
  std::string loader_kind = "standard";
  // Each thread count is measured this many times with a fresh allocator; the verdict takes the
  // best (the least disturbed by the rest of a shared machine).
  std::size_t repeat = 3;
};

}  // namespace lab
