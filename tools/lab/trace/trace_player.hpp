#pragma once

#include <cstdint>
#include <memory_resource>
#include <unordered_map>
#include <vector>

#include "backend.hpp"
#include "harness_memory.hpp"
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

  // Throws TraceError (through reader.fail, so with file and line) when the event is impossible:
  // an unborn or dead loader, a loader born twice, allocation ids not increasing. A free of an
  // allocation the loader does not hold is skipped and counted.
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
    bool born = false;
    bool dead = false;
    std::pmr::vector<Block> blocks{harness_memory()};
  };

  void* allocate_or_fail(LoaderHandle loader, const TraceEvent& e, const TraceReader& reader);
  LoaderState& living(std::uint64_t id, const char* what, const TraceReader& reader);

  Backend& backend_;
  std::pmr::unordered_map<std::uint64_t, LoaderState> loaders_;
  std::uint64_t next_allocation_ = 0;  // the smallest id the next allocation may have
  std::uint64_t live_bytes_ = 0;
  std::uint64_t live_loaders_ = 0;
  std::uint64_t skipped_frees_ = 0;
};

}  // namespace lab
