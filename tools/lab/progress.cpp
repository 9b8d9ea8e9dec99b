#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace lab {

Progress::Progress(bool enabled, std::string label) : enabled_(enabled && isatty(STDERR_FILENO)), label_(std::move(label)) {}

Progress::~Progress() { finish(); }

void Progress::set_total(std::size_t units) {
  total_ = units;
  done_ = 0;
}

void Progress::advance(std::size_t units) {
  done_ += units;
  if (enabled_) draw(false);
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

void Progress::draw(bool force) {
  const auto now = std::chrono::steady_clock::now();
  // Redrawing ten times a second is smooth enough and keeps the cost out of the measurements.
  if (!force && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 0.0;
  const int filled = static_cast<int>(fraction * kWidth + 0.5);
  std::fprintf(stderr, "\r\033[K%-14s [%.*s%*s] %3d%%", label_.c_str(), filled, "##############################",
               kWidth - filled, "", static_cast<int>(fraction * 100));
  std::fflush(stderr);
}

}  // namespace lab
