#include "trace/trace_checker.hpp"

#include <string>

#include "harness_memory.hpp"

namespace lab {

TraceChecker::TraceChecker() : alive_(harness_memory()) {}

void TraceChecker::require_alive(std::uint64_t loader, const char* what, const TraceReader& reader) const {
  const auto it = alive_.find(loader);
  if (it == alive_.end())
    reader.fail(std::string(what) + " for loader " + std::to_string(loader) + ", which was never born");
  if (!it->second) reader.fail(std::string(what) + " for loader " + std::to_string(loader) + ", which already died");
}

void TraceChecker::check(const TraceEvent& e, const TraceReader& reader) {
  switch (e.type) {
    case TraceEvent::Type::allocate:
      require_alive(e.loader, "an allocation", reader);
      if (e.allocation < next_allocation_)
        reader.fail("allocation id " + std::to_string(e.allocation) + " is not above the previous one");
      next_allocation_ = e.allocation + 1;
      break;
    case TraceEvent::Type::free:
      require_alive(e.loader, "a free", reader);
      break;
    case TraceEvent::Type::born:
      if (!alive_.emplace(e.loader, true).second)
        reader.fail("loader " + std::to_string(e.loader) + " is born twice");
      break;
    case TraceEvent::Type::dies:
      require_alive(e.loader, "a death", reader);
      alive_[e.loader] = false;
      break;
    case TraceEvent::Type::marker:
      break;
  }
}

}  // namespace lab
