#include "os/process_barrier.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace metaspace::os {

namespace {

long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0u, 0); }

}  // namespace

bool process_barrier_available() {
  // A function-local static: registered once, by the first caller.
  static const bool registered = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  return registered;
}

void process_barrier() {
  // Cannot fail once registered (the commands exist: registration succeeded).
  (void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

}  // namespace metaspace::os
