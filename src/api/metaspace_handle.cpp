#include "api/metaspace_handle.hpp"

#include "common/error.hpp"
#include "instance/metaspace.hpp"

namespace metaspace::api {

MetaspaceCall::MetaspaceCall(const ms_metaspace_t* handle) {
  if (handle == nullptr) {
    fail(MS_ERR_INVALID_ARGUMENT, "no metaspace");
    return;
  }
  switch (live_metaspaces::enter(handle, &call_)) {
    case live_metaspaces::HandleState::kLive:
      return;
    case live_metaspaces::HandleState::kDestroyed:
      fail(MS_ERR_DESTROYED, "metaspace %p was destroyed", static_cast<const void*>(handle));
      return;
    case live_metaspaces::HandleState::kUnknown:
      break;
  }
  fail(MS_ERR_INVALID_ARGUMENT,
       "%p is not a metaspace handle (or one destroyed before the last %zu destructions)",
       static_cast<const void*>(handle), live_metaspaces::kRememberedDestroyed);
}

}  // namespace metaspace::api
