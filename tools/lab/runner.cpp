#include "runner.hpp"

#include <exception>
#include <filesystem>

#include "backend_registry.hpp"

namespace lab {

BackendRun run_in_process(const Scenario& scenario, const std::string& backend, const WorkloadParams& workload,
                          const BackendOptions& options, bool show_progress,
                          const std::function<void(const BackendRun&)>& on_backend,
                          const Recorder::Listener& on_sample) {
  BackendRun run;
  run.name = backend;
  std::error_code ec;
  run.executable = std::filesystem::read_symlink("/proc/self/exe", ec).filename().string();
  const BackendFactory factory = find_backend_factory(backend);
  if (!factory) {
    run.error = "backend " + backend + " is not part of " + run.executable;
    if (on_backend) on_backend(run);
    return run;
  }
  bool announced = false;
  // The first backend a scenario creates describes the run; later ones (one per alignment or
  // thread count) differ only in what their samples record.
  Recorder recorder(run, on_sample);
  BackendFactory announcing = [&](const BackendOptions& o) {
    if (!announced) recorder.take_baseline();
    auto b = factory(o);
    if (!announced) {
      announced = true;
      run.settings = b->settings();
      if (on_backend) on_backend(run);
    }
    return b;
  };
  Progress progress(show_progress, backend);
  ScenarioContext ctx{announcing, options, workload, recorder, progress};
  try {
    scenario.run(ctx);
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  progress.finish();
  if (!announced && on_backend) on_backend(run);
  return run;
}

}  // namespace lab
