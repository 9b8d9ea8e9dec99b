#include "trace/trace_player.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace lab {

TracePlayer::TracePlayer(Backend& backend) : backend_(backend), loaders_(harness_memory()) {}

TracePlayer::LoaderState& TracePlayer::living(std::uint64_t id, const char* what, const TraceReader& reader) {
  auto it = loaders_.find(id);
  if (it == loaders_.end() || !it->second.born)
    reader.fail(std::string(what) + " for loader " + std::to_string(id) + ", which was never born");
  LoaderState& l = it->second;
  if (l.dead) reader.fail(std::string(what) + " for loader " + std::to_string(id) + ", which already died");
  return l;
}

void* TracePlayer::allocate_or_fail(LoaderHandle loader, const TraceEvent& e, const TraceReader& reader) {
  try {
    return backend_.allocate(loader, e.space, e.bytes);
  } catch (const BackendError& error) {
    reader.fail(error.what());  // the same message, with the trace's file and line
  }
}

void TracePlayer::apply(const TraceEvent& e, const TraceReader& reader) {
  switch (e.type) {
    case TraceEvent::Type::allocate: {
      LoaderState& l = living(e.loader, "an allocation", reader);
      if (e.allocation < next_allocation_)
        reader.fail("allocation id " + std::to_string(e.allocation) + " is not above the previous one");
      next_allocation_ = e.allocation + 1;
      void* p = allocate_or_fail(l.handle, e, reader);
      std::memset(p, 0x5A, e.bytes);
      l.blocks.push_back(Block{e.allocation, p, e.bytes});
      live_bytes_ += e.bytes;
      break;
    }
    case TraceEvent::Type::free: {
      LoaderState& l = living(e.loader, "a free", reader);
      auto it = std::lower_bound(l.blocks.begin(), l.blocks.end(), e.allocation,
                                 [](const Block& b, std::uint64_t id) { return b.id < id; });
      if (it == l.blocks.end() || it->id != e.allocation || !it->p) {
        ++skipped_frees_;
        break;
      }
      backend_.deallocate(l.handle, it->p, it->bytes);
      it->p = nullptr;
      live_bytes_ -= it->bytes;
      break;
    }
    case TraceEvent::Type::born: {
      LoaderState& l = loaders_[e.loader];
      if (l.born) reader.fail("loader " + std::to_string(e.loader) + " is born twice");
      l.handle = backend_.create_loader(e.kind);
      l.born = true;
      ++live_loaders_;
      break;
    }
    case TraceEvent::Type::dies: {
      LoaderState& l = living(e.loader, "a death", reader);
      backend_.destroy_loader(l.handle);
      for (const Block& b : l.blocks)
        if (b.p) live_bytes_ -= b.bytes;
      std::pmr::vector<Block>(harness_memory()).swap(l.blocks);
      l.handle = nullptr;
      l.dead = true;
      --live_loaders_;
      break;
    }
    case TraceEvent::Type::marker:
      break;
  }
}

}  // namespace lab
