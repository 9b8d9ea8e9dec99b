#include "api/metaspace_handle.hpp"

#include "common/error.hpp"
#include "instance/live_metaspaces.hpp"
#include "instance/metaspace.hpp"

namespace metaspace::api {

Metaspace* live_metaspace(const ms_metaspace_t* handle) {
  if (handle == nullptr) {
    fail(MS_ERR_INVALID_ARGUMENT, "no metaspace");
    return nullptr;
  }
  switch (live_metaspaces::state_of(handle)) {
    case live_metaspaces::HandleState::kLive:
      return reinterpret_cast<Metaspace*>(const_cast<ms_metaspace_t*>(handle));
    case live_metaspaces::HandleState::kDestroyed:
      fail(MS_ERR_DESTROYED, "metaspace %p was destroyed", static_cast<const void*>(handle));
      return nullptr;
    case live_metaspaces::HandleState::kUnknown:
      break;
  }
  fail(MS_ERR_INVALID_ARGUMENT,
       "%p is not a metaspace handle (or one destroyed before the last %zu destructions)",
       static_cast<const void*>(handle), live_metaspaces::kRememberedDestroyed);
  return nullptr;
}

}  // namespace metaspace::api
