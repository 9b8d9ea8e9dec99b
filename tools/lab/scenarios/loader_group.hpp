#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend.hpp"
#include "progress.hpp"
#include "random.hpp"
#include "recorder.hpp"
#include "simulated_loader.hpp"
#include "workload.hpp"

namespace lab {

// The loaders of a scenario, created in batches and released in random order.
class LoaderGroup {
 public:
  LoaderGroup(Backend& backend, LoaderKind kind) : backend_(backend), kind_(kind) {}

  // Creates `count` loaders; returns the index of the first.
  std::size_t add(std::size_t count);

  // Loads classes [from_class, to_class) of loaders [first, last), round-robin: class i of every
  // loader before class i + 1 of any, so that the loaders' chunks interleave in memory as in the
  // measured workload.
  void load_round_robin(Workload& workload, std::size_t first, std::size_t last, std::size_t from_class,
                        std::size_t to_class, Progress& progress);

  void load(std::size_t index, const ClassShape& shape) { loaders_[index].load(shape); }
  void release(std::size_t index) { loaders_[index].release(); }
  // The living loaders' indices in random order.
  std::vector<std::size_t> alive_shuffled(Random& random) const;

  // A sample of the group's backend with the group's live bytes and counts.
  void sample(Recorder& recorder, const std::string& phase, int step);
  // After unloading: the backend's purge (a runtime purges right after class unloading; every
  // backend gets the same chance), then a sample.
  void purge_and_sample(Recorder& recorder, const std::string& phase, int step);
  // Releases every living loader in random order, in `steps` batches, each followed by
  // purge_and_sample(phase, 1..steps).
  void release_in_steps(std::size_t steps, Random& order, Recorder& recorder, Progress& progress,
                        const std::string& phase);

  std::size_t size() const { return loaders_.size(); }
  std::size_t live_bytes() const;
  std::size_t live_loaders() const;
  std::size_t live_classes() const;
  // {"classes": n, "loaders": n}: what every sample of a loading scenario records.
  nlohmann::json counts() const;

 private:
  Backend& backend_;
  LoaderKind kind_;
  std::vector<SimulatedLoader> loaders_;
  ClassShape shape_;
};

// Splits `count` items into `steps` batches whose sizes differ by at most one; returns the end
// index of each batch.
std::vector<std::size_t> batch_ends(std::size_t count, std::size_t steps);

}  // namespace lab
