#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.hpp"
#include "trace/placement_floor.hpp"

namespace lab {

// The lab's goal on real traces: elastic's footprint/live at most this at every sample.
constexpr double kRealTraceGoal = 1.05;

// A recorded workload (docs/trace-format.md), e.g. imported from a real JVM's metaspace log, replayed
// through a backend. Samples at the end of each run of loader deaths (after a purge, as a runtime
// purges after class unloading), at every marker of the trace and every --sample-every events.
class ReplayScenario : public Scenario {
 public:
  std::string name() const override { return "replay"; }
  std::string description() const override {
    return "replay a metaspace trace (metaspace-lab import-hotspot / record) through the backends";
  }
  void add_flags(ParamSet& params) override;
  void validate() const override;
  void run(ScenarioContext& ctx) const override;
  std::string summary(const RunResult& result) const override;
  std::vector<std::string> verdict(const RunResult& result) const override;
  std::optional<double> elastic_goal() const override { return kRealTraceGoal; }

  std::string trace;                // the one this process replays (--trace, or one of `traces`)
  std::vector<std::string> traces;  // the positional TRACE arguments: files or folders
  std::size_t sample_every = 1000000;
  // Samples are thinned beyond this: after every max_samples samples kept, only every second
  // candidate of the ones before is (1 M loader deaths give ~9 * max_samples samples, not 1 M).
  std::size_t max_samples = 5000;
  // The trace's placement floor, when the caller has it already (run_replays finds it in the pass
  // that checks the trace); verdict() reads the trace for it otherwise.
  std::optional<PlacementFloor::Point> floor;
};

// Reads the whole trace once, without a backend: a trace that cannot be read is reported once,
// before any backend runs. Throws std::invalid_argument with file:line. Returns the trace's
// placement floor (trace/placement_floor.hpp), taken on the same pass.
std::optional<PlacementFloor::Point> check_trace(const std::string& path);

// HotSpot's own figures, from the samples taken at the trace's markers that carry them: live is the
// trace's live at that point, used and committed are HotSpot's. Empty when the trace has none.
ReferenceSeries hotspot_series(const RunResult& result);

}  // namespace lab
