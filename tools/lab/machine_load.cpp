#include "machine_load.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace lab {

std::string MachineLoad::describe() const { return fmt::format("load average {:.2f} on {} cores", load, cores); }

std::string MachineLoad::judge(const std::string& goal, bool met) const {
  if (busy()) return fmt::format("{}: inconclusive, {}: busier than its cores", goal, describe());
  return fmt::format("{}: {}", goal, met ? "met" : "MISSED");
}

MachineLoad machine_load() {
  MachineLoad m;
  double l[1] = {0};
  if (getloadavg(l, 1) == 1) m.load = l[0];
  m.cores = std::max(1u, std::thread::hardware_concurrency());
  return m;
}

}  // namespace lab
