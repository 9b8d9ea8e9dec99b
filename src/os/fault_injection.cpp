#include "os/fault_injection.hpp"

#include <atomic>

namespace metaspace::os {

namespace {
std::atomic<uint64_t> g_countdown[kFaultPoints];
std::atomic<uint64_t> g_calls[kFaultPoints];
}  // namespace

void inject_fault(FaultPoint point, uint64_t nth) {
  g_countdown[static_cast<int>(point)].store(nth, std::memory_order_relaxed);
}

uint64_t fault_point_calls(FaultPoint point) {
  return g_calls[static_cast<int>(point)].load(std::memory_order_relaxed);
}

bool fault_now(FaultPoint point) {
  int i = static_cast<int>(point);
  g_calls[i].fetch_add(1, std::memory_order_relaxed);
#ifdef METASPACE_FAULT_INJECTION
  uint64_t left = g_countdown[i].load(std::memory_order_relaxed);
  while (left != 0) {
    if (g_countdown[i].compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      return left == 1;
    }
  }
#endif
  return false;
}

}  // namespace metaspace::os
