#include "recorder.hpp"

#include <algorithm>

#include "harness_memory.hpp"
#include "proc_memory.hpp"

namespace lab {

Recorder::Recorder(BackendRun& run, Listener listener)
    : run_(run), listener_(std::move(listener)), step_start_(std::chrono::steady_clock::now()) {}

void Recorder::restart_clock() { step_start_ = std::chrono::steady_clock::now(); }

void Recorder::take_baseline() {
  const std::size_t rss = proc_memory::resident_bytes();
  rss_baseline_ = rss - std::min(rss, harness_resident_bytes());
}

const Sample& Recorder::sample(Backend& backend, const std::string& phase, int step, std::size_t live,
                               nlohmann::json extra) {
  const auto now = std::chrono::steady_clock::now();
  Sample s;
  s.phase = phase;
  s.step = step;
  s.live = live;
  s.elapsed_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - step_start_).count());
  MemoryFigures f = backend.figures();
  s.used = f.used;
  s.committed = f.committed;
  s.footprint = f.footprint ? f.footprint : f.committed;
  const std::size_t rss = proc_memory::resident_bytes();
  const std::size_t own = std::min(rss, harness_resident_bytes() + rss_baseline_);
  s.rss = rss - own;
  s.mappings = proc_memory::mapping_count();
  s.extra = std::move(f.extra);
  for (auto& [k, v] : extra.items()) s.extra[k] = v;
  run_.samples.push_back(std::move(s));
  if (listener_) listener_(run_.samples.back());
  restart_clock();
  return run_.samples.back();
}

}  // namespace lab
