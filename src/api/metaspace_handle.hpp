// The metaspace a handle passed to the C API names.
//
// A metaspace handle is its object's address. Every exported call that takes one checks it here
// before reading anything there (docs/guarantees.md): a live metaspace's handle is found among
// the live ones without a lock (live_metaspaces::enter, a load or two and a count); a handle of
// one of the last 64 metaspaces destroyed gets MS_ERR_DESTROYED; anything else gets
// MS_ERR_INVALID_ARGUMENT. No metaspace is ever placed where one was, so a handle cannot name a
// newer one. The call stays counted in until it ends, and ms_destroy waits for the calls of other
// threads (live_metaspaces::retire). The narrow class pointer functions and ms_is_archived (the
// runtime's hot path) do not check.
#pragma once

#include <metaspace/metaspace.h>

#include "instance/live_metaspaces.hpp"

namespace metaspace {
class Metaspace;
}

namespace metaspace::api {

// A call on the metaspace a handle names, for the call's scope.
class MetaspaceCall {
 public:
  // Records the error (ms_last_error) if the handle names no live metaspace.
  explicit MetaspaceCall(const ms_metaspace_t* handle);
  // The live metaspace, or null: the handle named none, or this thread destroyed it since (from
  // within this call: the GC callback).
  Metaspace* get() const { return call_.metaspace(); }
  live_metaspaces::Call& call() { return call_; }

 private:
  live_metaspaces::Call call_;
};

}  // namespace metaspace::api
