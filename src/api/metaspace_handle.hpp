// The metaspace a handle passed to the C API names.
//
// A metaspace handle is its object's address. Every exported call that takes one checks it here
// before reading anything there (docs/guarantees.md): a live metaspace's handle is found among
// the live ones without a lock (live_metaspaces::state_of, a load or two); a handle of one of the
// last 64 metaspaces destroyed gets MS_ERR_DESTROYED, and no new metaspace is placed at such an
// address, so the handle cannot name one; anything else gets MS_ERR_INVALID_ARGUMENT. The narrow
// class pointer functions and ms_is_archived (the runtime's hot path) do not check.
#pragma once

#include <metaspace/metaspace.h>

namespace metaspace {
class Metaspace;
}

namespace metaspace::api {

// The live metaspace, or null with the error recorded (ms_last_error).
Metaspace* live_metaspace(const ms_metaspace_t* handle);

}  // namespace metaspace::api
