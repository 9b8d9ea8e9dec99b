#pragma once

#include <cstdint>
#include <memory_resource>
#include <unordered_map>

#include "trace/trace_event.hpp"
#include "trace/trace_reader.hpp"

namespace lab {

// The rules of a trace that span records (trace-format.md, "Bad input"): a loader is born once,
// allocates, frees and dies only while alive, and allocation ids increase. The reader checks each
// record alone; this checks the sequence, without a backend, so a whole trace can be judged once
// before any backend runs (`replay`, `compare replay`), and the player applies the same rules
// through it. Memory: one hash-map entry per loader seen (ids may be sparse), in harness_memory().
class TraceChecker {
 public:
  TraceChecker();

  // Throws TraceError through reader.fail (so with the trace's file and line) when the event is
  // impossible: an unborn or dead loader, a loader born twice, allocation ids not increasing.
  void check(const TraceEvent& event, const TraceReader& reader);

 private:
  void require_alive(std::uint64_t loader, const char* what, const TraceReader& reader) const;

  std::pmr::unordered_map<std::uint64_t, bool> alive_;  // loader id -> alive (false: died)
  std::uint64_t next_allocation_ = 0;                   // the smallest id the next allocation may have
};

}  // namespace lab
