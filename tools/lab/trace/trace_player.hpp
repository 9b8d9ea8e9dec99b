#pragma once

#include <cstdint>
#include <vector>

#include "backend.hpp"
#include "trace/trace_reader.hpp"

namespace lab {

// Applies a trace's loader and allocation events to one backend and keeps the trace's own
// accounting (live bytes: allocated, not freed, loader alive). Memory grows with the live loaders
// and allocations only: each loader keeps its allocations in id order (ids increase through a
// trace), so a free finds its block by binary search and a death drops the loader's list.
class TracePlayer {
 public:
  explicit TracePlayer(Backend& backend) : backend_(backend) {}

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
    std::vector<Block> blocks;
  };

  LoaderState& living(std::uint64_t id, const char* what, const TraceReader& reader);

  Backend& backend_;
  std::vector<LoaderState> loaders_;
  std::uint64_t next_allocation_ = 0;  // the smallest id the next allocation may have
  std::uint64_t live_bytes_ = 0;
  std::uint64_t live_loaders_ = 0;
  std::uint64_t skipped_frees_ = 0;
};

}  // namespace lab
