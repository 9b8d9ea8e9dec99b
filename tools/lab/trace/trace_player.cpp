#include "trace/trace_player.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace lab {

TracePlayer::TracePlayer(Backend& backend) : backend_(backend), loaders_(harness_memory()) {}

TracePlayer::LoaderState& TracePlayer::living(std::uint64_t id) {
  // The checker has made sure the loader is alive, so it is in the map.
  return loaders_.find(id)->second;
}

void* TracePlayer::allocate_or_fail(LoaderHandle loader, const TraceEvent& e, const TraceReader& reader) {
  try {
    return backend_.allocate(loader, e.space, e.bytes);
  } catch (const BackendError& error) {
    reader.fail(error.what());  // the same message, with the trace's file and line
  }
}

void TracePlayer::apply(const TraceEvent& e, const TraceReader& reader) {
  checker_.check(e, reader);
  switch (e.type) {
    case TraceEvent::Type::allocate: {
      LoaderState& l = living(e.loader);
      void* p = allocate_or_fail(l.handle, e, reader);
      std::memset(p, 0x5A, e.bytes);
      l.blocks.push_back(Block{e.allocation, p, e.bytes});
      live_bytes_ += e.bytes;
      break;
    }
    case TraceEvent::Type::free: {
      LoaderState& l = living(e.loader);
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
      l.handle = backend_.create_loader(e.kind);
      ++live_loaders_;
      break;
    }
    case TraceEvent::Type::dies: {
      auto it = loaders_.find(e.loader);
      backend_.destroy_loader(it->second.handle);
      for (const Block& b : it->second.blocks)
        if (b.p) live_bytes_ -= b.bytes;
      loaders_.erase(it);  // the checker remembers that it died
      --live_loaders_;
      break;
    }
    case TraceEvent::Type::marker:
      break;
  }
}

}  // namespace lab
