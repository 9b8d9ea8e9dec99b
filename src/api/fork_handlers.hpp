// fork() without exec from a process whose other threads may be inside the library (a runtime
// that forks workers, an interpreter's multiprocessing): pthread_atfork handlers close the fork
// gate before the fork (os/fork_gate.hpp: no thread is inside the library when the process is
// copied) and open it after, in the child with every other thread's record ended
// (docs/threads.md, "fork"). A lazily relocated archive is filled while the gate is closed.
#pragma once

namespace metaspace::api {

// Registers the handlers once per process (further calls return at once). Called by ms_create
// and by the settings parser before they take any lock.
void install_fork_handlers();

}  // namespace metaspace::api
