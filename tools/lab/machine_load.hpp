#pragma once

#include <string>

namespace lab {

// The 1-minute load average against the cores: a timing taken while the machine runs more than it
// has cores measures the scheduler, so a timing verdict taken then says "inconclusive" (`threads`
// printed 0.97x at load 7.6 on 2 cores, 1.8x on an idle machine).
struct MachineLoad {
  double load = 0;
  unsigned cores = 1;

  bool busy() const { return load > cores; }
  std::string describe() const;
  // "<goal>: met" / "MISSED", or "<goal>: inconclusive, load average ... : busier than its cores".
  std::string judge(const std::string& goal, bool met) const;
};

MachineLoad machine_load();

}  // namespace lab
