// fork() without exec from a process whose other threads may be inside the library at that
// moment (a runtime that forks workers, an interpreter's multiprocessing): the child has only
// the thread that forked, and a lock another thread held is held in the child for ever. Before
// the handlers existed, a child whose parent had two threads loading classes hung in its first
// ms_loader_create or ms_purge in 32 of 40 forks. As glibc's malloc does for its arenas, a
// pthread_atfork prepare handler takes every lock of the library in the lock order (so that no
// thread is inside a locked section, and no owner inside an inline free or reuse, when the
// process is copied), and the parent and child handlers let them go; in the child every other
// thread counts as ended (docs/threads.md, "fork").
#pragma once

#include <mutex>

namespace metaspace::api {

// Registers the handlers once per process (further calls return at once). Called by ms_create
// and by the settings parser, the two ways into the library's locks.
void install_fork_handlers();

// The settings parser's interned archive paths (settings_options.cpp).
std::mutex& interned_paths_lock();

}  // namespace metaspace::api
