#pragma once

#include <cstdint>
#include <memory_resource>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "harness_memory.hpp"
#include "trace/trace_checker.hpp"
#include "trace/trace_reader.hpp"

namespace lab {

// Applies a trace's loader and allocation events to one backend and keeps the trace's own
// accounting (live bytes: allocated, not freed, loader alive). It writes every block it allocates,
// as a runtime initializes its metadata (without it RSS would show untouched pages as free).
// Memory grows with the loaders seen and the live allocations only: loaders are found by id in a
// hash map (ids may be sparse), each loader keeps its allocations in id order (ids increase
// through a trace), so a free finds its block by binary search and a death drops the loader's
// list. The tables live in harness_memory(), outside the malloc heap and out of the reported RSS.
class TracePlayer {
 public:
  explicit TracePlayer(Backend& backend);

  // Throws TraceError (through reader.fail, so with file and line) when the event is impossible
  // (TraceChecker's rules) or the backend refuses an allocation. A free of an allocation the
  // loader does not hold is skipped and counted.
  void apply(const TraceEvent& event, const TraceReader& reader);

  std::uint64_t live_bytes() const { return live_bytes_; }
  std::uint64_t live_loaders() const { return live_loaders_; }
  std::uint64_t skipped_frees() const { return skipped_frees_; }

 private:
  struct Block {
    std::uint64_t id;
    void* p;  // null once freed
    std::uint64_t bytes;
  };
  struct LoaderState {
    LoaderHandle handle = nullptr;
    std::pmr::vector<Block> blocks{harness_memory()};
  };

  void* allocate_or_fail(LoaderHandle loader, const TraceEvent& e, const TraceReader& reader);
  LoaderState& living(std::uint64_t id);

  Backend& backend_;
  TraceChecker checker_;
  std::pmr::unordered_map<std::uint64_t, LoaderState> loaders_;  // the living loaders
  std::uint64_t live_bytes_ = 0;
  std::uint64_t live_loaders_ = 0;
  std::uint64_t skipped_frees_ = 0;
};

}  // namespace lab
