#include "scenarios/scenario.hpp"

#include <stdexcept>

#include "scenarios/interleaved.hpp"
#include "scenarios/micro.hpp"
#include "scenarios/one_loader.hpp"
#include "scenarios/spikes.hpp"
#include "scenarios/threads.hpp"

namespace lab {

std::string Scenario::summary(const RunResult&) const { return {}; }

std::vector<std::string> Scenario::verdict(const RunResult&) const { return {}; }

std::vector<std::unique_ptr<Scenario>> make_scenarios() {
  std::vector<std::unique_ptr<Scenario>> out;
  out.push_back(std::make_unique<InterleavedScenario>());
  out.push_back(std::make_unique<SpikesScenario>());
  out.push_back(std::make_unique<OneLoaderScenario>());
  out.push_back(std::make_unique<ThreadsScenario>());
  out.push_back(std::make_unique<MicroScenario>());
  return out;
}

LoaderKind parse_loader_kind(const std::string& text) {
  if (auto kind = loader_kind_from_name(text)) return *kind;
  throw std::invalid_argument("--loader-kind must be boot, standard or micro, not '" + text + "'");
}

}  // namespace lab
