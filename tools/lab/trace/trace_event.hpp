#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"

namespace lab {

// One record of a metaspace trace (docs/trace-format.md). Loader and allocation ids are the
// trace's own: dense, never reused within a trace.
struct TraceEvent {
  enum class Type { born, allocate, free, dies, marker };

  Type type = Type::allocate;
  std::uint64_t loader = 0;
  LoaderKind kind = LoaderKind::standard;  // born
  Space space = Space::nonclass;           // allocate
  std::uint64_t bytes = 0;                 // allocate
  std::uint64_t allocation = 0;            // allocate, free
  // marker: a label (the sample's phase in a replay) and figures as key=value (bytes or counts).
  std::string label;
  std::vector<std::pair<std::string, std::uint64_t>> figures;

  // The figure named `key`, or `fallback`.
  std::uint64_t figure(const std::string& key, std::uint64_t fallback = 0) const;
  bool has_figure(const std::string& key) const;
};

}  // namespace lab
