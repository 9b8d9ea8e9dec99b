#pragma once

#include <string>
#include <vector>

#include "machine_load.hpp"
#include "scenarios/scenario.hpp"

namespace lab {

// Loading throughput with several threads, the seeds' class-loading benchmark: a fixed number of
// classes loaded by 1, 2, 4, ... threads, in two modes, a fresh allocator per run:
//   own    — each thread loads into loaders of its own (class loaders per thread);
//   shared — every thread loads into one loader (a JVM's parallel-capable application class
//            loader): MS_LOADER_SHARED for libmetaspace; allocators without such a loader get
//            one lock around every call, as a runtime's loader lock would; thread-bound ones
//            (mimalloc heaps) cannot, and are skipped.
class ThreadsScenario : public Scenario {
 public:
  std::string name() const override { return "threads"; }
  std::string description() const override {
    return "a fixed number of classes loaded by 1, 2, ... threads, into loaders of their own and into one "
           "shared loader: throughput";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;
  std::vector<std::string> verdict(const RunResult& result) const override;

  std::size_t classes = 100000;
  std::size_t classes_per_loader = 1000;
  // The seeds' benchmark. More threads than cores (this project's machine has two) oversubscribe
  // it: those rows show what contention costs, not parallel speed-up.
  std::vector<std::size_t> thread_counts = {1, 2, 4, 8, 16, 32};
  // "own", "shared" or "both".
  std::string mode = "both";
  std::string loader_kind = "standard";
  // Each thread count is measured this many times with a fresh allocator; the verdict takes the
  // best (the least disturbed by the rest of a shared machine).
  std::size_t repeat = 3;
  // The machine's load before this scenario's own threads ran: the scenario is made when the lab
  // starts. Judged against the load after the run, its own 4..32-thread rows (which oversubscribe
  // the cores on purpose) raised the 1-minute average enough to call every verdict inconclusive:
  // 4.46 at the end of a run that started at 1.04 on 2 cores.
  MachineLoad load_before = machine_load();

 private:
  void run_own(ScenarioContext& ctx) const;
  void run_shared(ScenarioContext& ctx) const;
};

}  // namespace lab
