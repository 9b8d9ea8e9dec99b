#pragma once

#include <functional>
#include <string>

#include "backend.hpp"
#include "recorder.hpp"
#include "run_result.hpp"
#include "scenarios/scenario.hpp"

namespace lab {

// Runs a scenario on one backend of this executable. Failures (allocator errors included) end up
// in BackendRun::error with the samples taken so far, never as an exception.
// `on_backend` is called once the backend exists (its settings known), before the first sample.
BackendRun run_in_process(const Scenario& scenario, const std::string& backend, const WorkloadParams& workload,
                          const BackendOptions& options, bool show_progress,
                          const std::function<void(const BackendRun&)>& on_backend = {},
                          const Recorder::Listener& on_sample = {});

}  // namespace lab
