#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace lab {

// A progress bar on stderr for long runs. Silent with --quiet or when stderr is not a terminal,
// so logs and scripts get clean output.
class Progress {
 public:
  Progress(bool enabled, std::string label);
  ~Progress();

  void set_total(std::size_t units);
  void advance(std::size_t units = 1);
  void finish();

 private:
  void draw(bool force);

  bool enabled_;
  std::string label_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

}  // namespace lab
