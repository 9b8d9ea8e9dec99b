// The metaspaces of the process: whether a metaspace handle names one, and which one holds a
// loader object's address.
//
// A loader handle names an object in its metaspace's bookkeeping slabs, and that object is reused
// as soon as the loader dies (dead_handles.hpp). So a call with a stale handle cannot learn its
// metaspace from the object (it may be another loader's now, free, or a page given back that
// reads zeros): the slow paths that meet a handle whose object does not carry it, and
// ms_loader_get_stats (which may race with the loader's destruction), find the metaspace here,
// by the reserved range of its slabs, and ask it under its registry lock. A process holds few
// metaspaces; the lookup is a short scan under one lock, on error paths and statistics only.
#pragma once

#include <cstddef>

namespace metaspace {

class Metaspace;

namespace live_metaspaces {

// How many destroyed metaspaces' handles are remembered (state_of, destroyed_recently).
inline constexpr size_t kRememberedDestroyed = 64;

void add(Metaspace* ms);
// At destruction; the address is remembered among the last kRememberedDestroyed (state_of).
void remove(Metaspace* ms);

// What a metaspace handle names: a live metaspace, one of the last 64 destroyed, or nothing
// known (null, a foreign pointer, or destroyed longer ago). Reads nothing at the handle, so a
// stale or foreign pointer costs no fault. One or two loads for a process's first metaspaces.
enum class HandleState { kLive, kDestroyed, kUnknown };
HandleState state_of(const void* handle);
// Whether a metaspace at this address was among the last 64 destroyed: a new metaspace is not
// placed there (Metaspace::operator new), so that a stale handle is never taken for it.
bool destroyed_recently(const void* address);
// The metaspace whose loader objects' range holds p, or null. The caller must not be racing
// with that metaspace's ms_destroy (using a destroyed metaspace is undefined).
Metaspace* holding_loader_address(const void* p);

// fork (docs/threads.md, "fork"), while no thread is inside the library (os/fork_gate.hpp):
// keeps every loader owner out of its inline free and reuse, which take no lock and so are not
// gated (one barrier for all), and lets them in again after the fork, in parent and child.
void exclude_inline_owners_for_fork();
void readmit_inline_owners_after_fork();

}  // namespace live_metaspaces
}  // namespace metaspace
