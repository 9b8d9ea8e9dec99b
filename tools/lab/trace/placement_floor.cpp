#include "trace/placement_floor.hpp"

#include <algorithm>
#include <cmath>

#include "harness_memory.hpp"
#include "trace/trace_checker.hpp"
#include "trace/trace_reader.hpp"

namespace lab {

PlacementFloor::PlacementFloor(const PlacementFloorOptions& options)
    : options_(options), loaders_(harness_memory()), allocations_(harness_memory()) {}

double PlacementFloor::space_ratio(double bytes_per_loader, double p, double page_bytes) {
  if (bytes_per_loader <= 0 || p <= 0) return 1.0;
  const double x = page_bytes / bytes_per_loader;
  if (x < 1) return 1.0;  // a loader spans pages: its whole pages die with it, only the shared ends count
  const double k = std::floor(x);
  const double q = 1 - p;
  // A page with bytes of m loaders stays with probability f(m); a page holds at least ceil(x)
  // loaders' worth of bytes at b each, and f is concave: the floor is the better of k and k + 1.
  const auto f = [q](double m) { return 1 - std::pow(q, m); };
  return (x / p) * std::min(f(k) / k, f(k + 1) / x);
}

std::uint32_t PlacementFloor::cohort_for(LoaderKind kind) {
  std::uint32_t& slot = current_[static_cast<int>(kind)];
  if (slot == 0) {
    cohorts_.emplace_back();
    slot = static_cast<std::uint32_t>(cohorts_.size());
  }
  return slot - 1;
}

void PlacementFloor::finish() {
  if (!deaths_pending_) return;
  deaths_pending_ = false;
  point("deaths-" + std::to_string(++death_runs_));
}

void PlacementFloor::add(const TraceEvent& e) {
  if (e.type != TraceEvent::Type::dies) finish();
  else deaths_pending_ = true;
  switch (e.type) {
    case TraceEvent::Type::born: {
      // Any birth after deaths, a boot loader's too (the script's rule), starts a new cohort.
      if (deaths_since_birth_) {
        for (auto& c : current_) c = 0;
        deaths_since_birth_ = false;
      }
      Loader l;
      l.boot = e.kind == LoaderKind::boot;
      if (!l.boot) {
        l.cohort = cohort_for(e.kind);
        Cohort& c = cohorts_[l.cohort];
        if (c.alive++ == 0) active_.push_back(l.cohort);
        c.born++;
        live_loaders_++;
      }
      loaders_[e.loader] = l;
      break;
    }
    case TraceEvent::Type::allocate: {
      Loader& l = loaders_.at(e.loader);
      const int s = e.space == Space::nonclass ? 0 : 1;
      const std::uint64_t b = (e.bytes + 7) / 8 * 8;
      allocations_[e.allocation] = {e.loader, s, b};
      l.held[s] += b;
      if (l.boot) {
        boot_held_ += b;
        break;
      }
      Cohort& c = cohorts_[l.cohort];
      c.live_held[s] += b;
      if (l.held[s] > l.peak[s]) {
        c.peak_sum[s] += l.held[s] - l.peak[s];
        l.peak[s] = l.held[s];
      }
      break;
    }
    case TraceEvent::Type::free: {
      const auto it = allocations_.find(e.allocation);
      if (it == allocations_.end() || it->second.loader != e.loader) break;  // as the player: skipped
      const Allocation a = it->second;
      allocations_.erase(it);
      Loader& l = loaders_.at(a.loader);
      l.held[a.space] -= a.bytes;
      if (!l.alive) break;
      if (l.boot) boot_held_ -= a.bytes;
      else cohorts_[l.cohort].live_held[a.space] -= a.bytes;
      break;
    }
    case TraceEvent::Type::dies: {
      Loader& l = loaders_.at(e.loader);
      l.alive = false;
      dead_++;
      deaths_since_birth_ = true;
      if (l.boot) {
        boot_held_ -= l.held[0] + l.held[1];
        break;
      }
      live_loaders_--;
      Cohort& c = cohorts_[l.cohort];
      c.live_held[0] -= l.held[0];
      c.live_held[1] -= l.held[1];
      if (--c.alive == 0) active_.erase(std::find(active_.begin(), active_.end(), l.cohort));
      break;
    }
    case TraceEvent::Type::marker: point(e.label); break;
  }
}

void PlacementFloor::point(const std::string& label) {
  std::uint64_t live = boot_held_;
  double need = static_cast<double>(boot_held_);
  const double page = static_cast<double>(options_.page_bytes);
  for (std::uint32_t i : active_) {
    const Cohort& c = cohorts_[i];
    const double p = static_cast<double>(c.alive) / static_cast<double>(c.born);
    for (int s = 0; s < 2; s++) {
      live += c.live_held[s];
      const double b = static_cast<double>(c.peak_sum[s]) / static_cast<double>(c.born);
      need += static_cast<double>(c.live_held[s]) * space_ratio(b, p, page);
    }
  }
  if (live == 0) return;
  const double objects =
      static_cast<double>(options_.loader_object_bytes * live_loaders_ +
                          options_.dead_handle_bytes * std::min<std::uint64_t>(dead_, options_.remembered_dead_handles));
  const double l = static_cast<double>(live);
  points_.push_back({label, live, need / l, (need + objects) / l});
}

std::optional<PlacementFloor::Point> PlacementFloor::worst() const {
  std::uint64_t peak = 0;
  for (const auto& p : points_) peak = std::max(peak, p.live);
  const Point* worst = nullptr;
  for (const auto& p : points_)
    if (p.live * 100 >= peak && (worst == nullptr || p.with_bookkeeping > worst->with_bookkeeping)) worst = &p;
  if (worst == nullptr) return std::nullopt;
  return *worst;
}

PlacementFloor read_placement_floor(const std::string& trace_path, const PlacementFloorOptions& options) {
  TraceReader reader(trace_path);
  TraceChecker checker;
  PlacementFloor floor(options);
  TraceEvent e;
  while (reader.next(e)) {
    checker.check(e, reader);
    floor.add(e);
  }
  floor.finish();
  return floor;
}

std::optional<PlacementFloor::Point> placement_floor(const std::string& trace_path, const PlacementFloorOptions& options) {
  return read_placement_floor(trace_path, options).worst();
}

}  // namespace lab
