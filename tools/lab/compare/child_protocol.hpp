#pragma once

#include <string>
#include <vector>

#include "run_result.hpp"

namespace lab {

// How a `compare` child reports to its parent: JSON lines on stdout, one object each,
//   {"type":"backend","schema_version":1,"name":..,"executable":..,"settings":{..}}
//   {"type":"sample", <sample fields>}        (any number, in order)
//   {"type":"error","message":..}            (the run failed; samples so far stand)
//   {"type":"end"}
std::string backend_line(const BackendRun& run);
std::string sample_line(const Sample& sample);
std::string error_line(const std::string& message);
std::string end_line();

// Rebuilds the runs from a child's lines; a run that never sent "end" gets an error.
class ChildStreamParser {
 public:
  void feed(const std::string& line);
  // Completes the parse; `exit_status` is the child's.
  std::vector<BackendRun> finish(int exit_status);

 private:
  std::vector<BackendRun> runs_;
  bool ended_ = false;
};

}  // namespace lab
