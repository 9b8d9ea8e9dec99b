#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "backend.hpp"
#include "run_result.hpp"

namespace lab {

// Takes the samples of one backend's run: times the steps between samples (without the cost of
// sampling itself, which reads /proc), collects the allocator's and the process's figures, and
// hands each sample to a listener (the JSON-lines stream of a `compare` child).
class Recorder {
 public:
  using Listener = std::function<void(const Sample&)>;

  explicit Recorder(BackendRun& run, Listener listener = {});

  // Starts timing the next step now (a scenario calls it after setting up a fresh backend).
  void restart_clock();
  // Takes the process's RSS now as the zero of every later sample's rss (the runner calls it
  // right before it creates the backend, so the lab's start-up memory is not the backend's).
  void take_baseline();

  const Sample& sample(Backend& backend, const std::string& phase, int step, std::size_t live,
                       nlohmann::json extra = nlohmann::json::object());

  const BackendRun& run() const { return run_; }

 private:
  BackendRun& run_;
  Listener listener_;
  std::chrono::steady_clock::time_point step_start_;
  std::size_t rss_baseline_ = 0;
};

}  // namespace lab
