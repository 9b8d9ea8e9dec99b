#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace lab {

// Draws the run's PNG with tools/plot/plot_lab.py (python3 + matplotlib). Returns an empty string
// on success, else a message saying what is missing and how to get it; never fatal, the table
// has already been printed.
std::string render_plot(const std::string& json_path, const std::string& png_path);

// The figures of one command, drawn by one python3 process: starting Python and importing
// matplotlib costs more than a figure. The process starts with the first figure queued and draws
// each as it comes (on the other core while the next traces replay); draw() waits for the last.
// While a batch is open (one at a time), report() and write_trace_summary() queue their figures
// here and finish their pages when it is drawn.
class PlotBatch {
 public:
  // Opens the batch of this command; `progress` has the script print a line per figure on stderr.
  explicit PlotBatch(bool progress);
  ~PlotBatch();  // draws what is still queued
  PlotBatch(const PlotBatch&) = delete;
  PlotBatch& operator=(const PlotBatch&) = delete;

  // The open batch, or nullptr.
  static PlotBatch* current();

  // Queues json -> png; `then` runs after the drawing with "" or the problem (as render_plot
  // returns it).
  void add(std::string json, std::string png, std::function<void(const std::string&)> then);
  // Waits until every queued figure is drawn, then runs each `then` in the order queued. Should the
  // first python3 lack matplotlib, the figures are drawn by the next one that has it.
  void draw();

 private:
  struct Job {
    std::string json, png;
    std::function<void(const std::string&)> then;
  };
  bool start_next();
  void send(const Job& job);
  int finish();
  bool script_cannot_draw();

  bool progress_;
  std::vector<Job> jobs_;
  pid_t pid_ = -1;              // the drawing process, once started
  int to_script_ = -1;          // its stdin
  bool started_ = false;
  std::size_t next_python_ = 0;  // the next interpreter to try
};

}  // namespace lab
