#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend_registry.hpp"
#include "params.hpp"
#include "progress.hpp"
#include "recorder.hpp"
#include "run_result.hpp"
#include "workload.hpp"

namespace lab {

// What a scenario gets to drive one backend: a factory (some scenarios need a fresh allocator per
// setting or thread count), the workload, and where to put samples. Nothing in a scenario knows
// which backend it drives.
struct ScenarioContext {
  BackendFactory make_backend;
  BackendOptions options;
  WorkloadParams workload;
  Recorder& recorder;
  Progress& progress;
};

class Scenario {
 public:
  virtual ~Scenario() = default;

  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual void add_flags(ParamSet& params) = 0;
  // Throws std::invalid_argument naming the bad flag.
  virtual void validate() const {}
  virtual void run(ScenarioContext& ctx) const = 0;

  // Text shown after the step table: the scenario's own figures (spike RSS, throughput, ...).
  virtual std::string summary(const RunResult& result) const;
  // Scenario-specific verdict lines, after the generic committed/live ones.
  virtual std::vector<std::string> verdict(const RunResult& result) const;
  // The bound on committed/live that the elastic backends must keep at every sample, where the
  // project sets one for this scenario (interleaved).
  virtual std::optional<double> elastic_goal() const { return std::nullopt; }
  // Whether HotSpot's measured interleaved-loaders series belongs beside this scenario's samples.
  virtual bool shows_hotspot_reference() const { return false; }
};

std::vector<std::unique_ptr<Scenario>> make_scenarios();

// Parses "boot" / "standard" / "micro"; throws std::invalid_argument otherwise.
LoaderKind parse_loader_kind(const std::string& text);

}  // namespace lab
