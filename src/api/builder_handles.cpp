#include "api/builder_handles.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace metaspace::api::builder_handles {
namespace {

// Function-local and never destroyed: builders may be discarded from static destructors.
std::mutex& lock() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<const void*>& live() {
  static auto* v = new std::vector<const void*>;
  return *v;
}
const void* g_discarded[kRememberedDiscarded];
size_t g_discarded_next = 0;

}  // namespace

void add(const void* builder) {
  std::lock_guard<std::mutex> guard(lock());
  live().push_back(builder);
}

bool remove(const void* builder) {
  std::lock_guard<std::mutex> guard(lock());
  auto& v = live();
  auto it = std::find(v.begin(), v.end(), builder);
  if (it == v.end()) return false;
  v.erase(it);
  g_discarded[g_discarded_next] = builder;
  g_discarded_next = (g_discarded_next + 1) % kRememberedDiscarded;
  return true;
}

HandleState state_of(const void* handle) {
  if (handle == nullptr) return HandleState::kUnknown;
  std::lock_guard<std::mutex> guard(lock());
  const auto& v = live();
  if (std::find(v.begin(), v.end(), handle) != v.end()) return HandleState::kLive;
  for (const void* dead : g_discarded) {
    if (dead == handle) return HandleState::kDiscarded;
  }
  return HandleState::kUnknown;
}

}  // namespace metaspace::api::builder_handles
