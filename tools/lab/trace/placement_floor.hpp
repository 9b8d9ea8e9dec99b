#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/trace_event.hpp"

namespace lab {

// The placement floor of a trace (docs/placement-bound.md): at each marker and at the end of each
// run of loader deaths (where the replay samples too: "deaths-k" here), the least
// footprint/live any allocator can expect if it keeps every block where it put it, gives memory
// back a page at a time and cannot foresee which loaders die first. Loaders born between two runs
// of deaths form a cohort; loaders of one kind in a cohort are taken as alike (their mean peak
// bytes per space, p = alive / born); the boot loader counts at 1.0; bookkeeping floor: one loader
// object per live loader that is not the boot loader, and each remembered dead handle.
// scripts/placement-bound.py computes the same model on its own; a lab test checks they agree.
//
// The summary of `compare replay` prints it beside elastic's worst figure, so that a reader sees
// which misses are the library's and which no such allocator could avoid.
//
// Cost: the sums per cohort are kept as the events come, so a marker costs one step per cohort
// with live loaders (at most the live loaders), not a walk of every loader ever born.
struct PlacementFloorOptions {
  std::size_t page_bytes = 4096;
  std::size_t loader_object_bytes = 128;
  std::size_t dead_handle_bytes = 4;
  std::size_t remembered_dead_handles = 1024;
};

class PlacementFloor {
 public:
  explicit PlacementFloor(const PlacementFloorOptions& options = {});

  // Events in trace order, of a trace TraceChecker accepts; then finish().
  void add(const TraceEvent& event);
  // The end of the trace: a run of deaths that ends it gets its point.
  void finish();

  struct Point {
    std::string label;          // the marker's, or "deaths-k" after the k-th run of deaths
    std::uint64_t live = 0;     // bytes the live loaders hold, each rounded to 8
    double memory = 0;          // the floor without bookkeeping, over live
    double with_bookkeeping = 0;  // plus the loader objects and remembered dead handles
    double bookkeeping() const { return with_bookkeeping - memory; }  // their share of it
  };
  // The point whose floor (bookkeeping included) is highest among those whose live is at least
  // 1 % of the largest live at a point (the rule the lab's ratios use); none without points.
  std::optional<Point> worst() const;
  const std::vector<Point>& points() const { return points_; }

  // The least expected committed / surviving live bytes of one space whose loaders hold
  // `bytes_per_loader` each and survive with probability p (docs/placement-bound.md).
  static double space_ratio(double bytes_per_loader, double p, double page_bytes);

 private:
  struct Cohort {
    std::uint64_t born = 0;
    std::uint64_t alive = 0;
    std::uint64_t peak_sum[2] = {};        // of every loader born in it, dead or alive
    std::uint64_t live_held[2] = {};       // of its live loaders
  };
  struct Loader {
    std::uint32_t cohort = 0;  // index in cohorts_; unused for the boot loader
    bool boot = false;
    bool alive = true;
    std::uint64_t held[2] = {};
    std::uint64_t peak[2] = {};
  };
  struct Allocation {
    std::uint64_t loader;
    int space;
    std::uint64_t bytes;
  };
  void point(const std::string& label);
  std::uint32_t cohort_for(LoaderKind kind);

  PlacementFloorOptions options_;
  std::pmr::unordered_map<std::uint64_t, Loader> loaders_;
  std::pmr::unordered_map<std::uint64_t, Allocation> allocations_;
  std::vector<Cohort> cohorts_;
  std::vector<std::uint32_t> active_;          // cohorts with live loaders
  std::uint32_t current_[3] = {};              // by LoaderKind: the open cohort's index + 1, or 0
  bool deaths_since_birth_ = false;
  bool deaths_pending_ = false;  // the last event was a death: its run ends at the next other one
  std::uint64_t death_runs_ = 0;
  std::uint64_t boot_held_ = 0;
  std::uint64_t live_loaders_ = 0;             // not boot
  std::uint64_t dead_ = 0;
  std::vector<Point> points_;
};

// Reads the whole trace, each event checked (TraceChecker) before it counts, and returns its
// floor, finished. Throws what TraceReader and TraceChecker throw (with file:line).
PlacementFloor read_placement_floor(const std::string& trace_path, const PlacementFloorOptions& options = {});

// read_placement_floor(...).worst().
std::optional<PlacementFloor::Point> placement_floor(const std::string& trace_path,
                                                     const PlacementFloorOptions& options = {});

}  // namespace lab
