#include "trace/trace_event.hpp"

namespace lab {

std::uint64_t TraceEvent::figure(const std::string& key, std::uint64_t fallback) const {
  for (const auto& [k, v] : figures)
    if (k == key) return v;
  return fallback;
}

bool TraceEvent::has_figure(const std::string& key) const {
  for (const auto& f : figures)
    if (f.first == key) return true;
  return false;
}

}  // namespace lab
