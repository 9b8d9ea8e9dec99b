// The metaspaces of the process, found by the address of a loader object.
//
// A loader handle names an object in its metaspace's bookkeeping slabs, and that object is reused
// as soon as the loader dies (dead_handles.hpp). So a call with a stale handle cannot learn its
// metaspace from the object (it may be another loader's now, free, or a page given back that
// reads zeros): the slow paths that meet a handle whose object does not carry it, and
// ms_loader_get_stats (which may race with the loader's destruction), find the metaspace here,
// by the reserved range of its slabs, and ask it under its registry lock. A process holds few
// metaspaces; the lookup is a short scan under one lock, on error paths and statistics only.
#pragma once

namespace metaspace {

class Metaspace;

namespace live_metaspaces {

void add(Metaspace* ms);
void remove(Metaspace* ms);
// The metaspace whose loader objects' range holds p, or null. The caller must not be racing
// with that metaspace's ms_destroy (using a destroyed metaspace is undefined).
Metaspace* holding_loader_address(const void* p);

// fork() without exec (docs/threads.md, "fork"): before it, every lock of every metaspace and of
// the threads' records (Metaspace::lock_for_fork); after it, in the parent, all let go; in the
// child, all let go and every thread but the caller taken as ended (the child has no other:
// their shared loaders' windows are adopted or retired as those of ended threads).
void lock_for_fork();
void unlock_after_fork_in_parent();
void unlock_after_fork_in_child();

}  // namespace live_metaspaces
}  // namespace metaspace
