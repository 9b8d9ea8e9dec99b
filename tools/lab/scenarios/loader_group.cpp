#include "scenarios/loader_group.hpp"

namespace lab {

std::size_t LoaderGroup::add(std::size_t count) {
  const std::size_t first = loaders_.size();
  for (std::size_t i = 0; i < count; ++i) loaders_.emplace_back(backend_, kind_);
  return first;
}

void LoaderGroup::load_round_robin(Workload& workload, std::size_t first, std::size_t last, std::size_t from_class,
                                   std::size_t to_class, Progress& progress) {
  for (std::size_t c = from_class; c < to_class; ++c) {
    for (std::size_t i = first; i < last; ++i) {
      workload.next_class(shape_);
      loaders_[i].load(shape_);
    }
    progress.advance(last - first);
  }
}

std::vector<std::size_t> LoaderGroup::alive_shuffled(Random& random) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < loaders_.size(); ++i)
    if (loaders_[i].alive()) out.push_back(i);
  random.shuffle(out);
  return out;
}

void LoaderGroup::sample(Recorder& recorder, const std::string& phase, int step) {
  recorder.sample(backend_, phase, step, live_bytes(), counts());
}

void LoaderGroup::purge_and_sample(Recorder& recorder, const std::string& phase, int step) {
  backend_.purge();
  sample(recorder, phase, step);
}

void LoaderGroup::release_in_steps(std::size_t steps, Random& order, Recorder& recorder, Progress& progress,
                                   const std::string& phase) {
  const auto victims = alive_shuffled(order);
  std::size_t begin = 0;
  int step = 1;
  for (std::size_t end : batch_ends(victims.size(), steps)) {
    for (std::size_t i = begin; i < end; ++i) release(victims[i]);
    progress.advance(end - begin);
    begin = end;
    purge_and_sample(recorder, phase, step++);
  }
}

std::size_t LoaderGroup::live_bytes() const {
  std::size_t sum = 0;
  for (const auto& l : loaders_) sum += l.live_bytes();
  return sum;
}

std::size_t LoaderGroup::live_loaders() const {
  std::size_t n = 0;
  for (const auto& l : loaders_) n += l.alive();
  return n;
}

std::size_t LoaderGroup::live_classes() const {
  std::size_t n = 0;
  for (const auto& l : loaders_) n += l.alive() ? l.classes() : 0;
  return n;
}

nlohmann::json LoaderGroup::counts() const { return {{"classes", live_classes()}, {"loaders", live_loaders()}}; }

std::vector<std::size_t> batch_ends(std::size_t count, std::size_t steps) {
  std::vector<std::size_t> ends;
  for (std::size_t s = 1; s <= steps; ++s) ends.push_back(count * s / steps);
  return ends;
}

}  // namespace lab
