#include "os/process_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace metaspace::os {

namespace {

long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0u, 0); }

// The commands the kernel offers (MEMBARRIER_CMD_QUERY), asked once: a cheap call. Registering
// for the expedited command is not: the kernel waits for an RCU grace period (18 ms seen in a
// JVM's start-up), so it waits for the first barrier, which only ms_verify and fork issue.
long supported_commands() {
  static const long mask = [] {
    long m = membarrier(MEMBARRIER_CMD_QUERY);
    return m < 0 ? 0L : m;
  }();
  return mask;
}

}  // namespace

bool process_barrier_available() {
  return (supported_commands() & (MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_GLOBAL)) != 0;
}

void process_barrier() {
  // A function-local static: the first barrier registers, once, for every thread.
  static const bool expedited =
      (supported_commands() & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
      membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  // The global command needs no registration; slower, and the fallback only if registering is
  // refused after the query offered it.
  (void)membarrier(expedited ? MEMBARRIER_CMD_PRIVATE_EXPEDITED : MEMBARRIER_CMD_GLOBAL);
}

}  // namespace metaspace::os
