#include "arena/owner_exclusion.hpp"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/assert.hpp"

namespace metaspace {

namespace {

long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0u, 0); }

}  // namespace

bool OwnerExclusion::available() {
  // A function-local static: registered by the first loader that frees, thread-safe.
  static const bool registered =
      membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  return registered;
}

OwnerExclusion::OwnerExclusion(ms__free_bins& bins) : bins_(bins) {
  MS_ASSERT(available(), "bins published without membarrier");
  exclude(bins_);
  barrier();
  wait_until_out(bins_);
}

OwnerExclusion::~OwnerExclusion() { readmit(bins_); }

void OwnerExclusion::exclude(ms__free_bins& bins) {
  __atomic_store_n(&bins.excluded, 1u, __ATOMIC_SEQ_CST);
}

void OwnerExclusion::barrier() {
  // Cannot fail once registered (the commands exist: registration succeeded).
  (void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

void OwnerExclusion::wait_until_out(const ms__free_bins& bins) {
  while (__atomic_load_n(&bins.busy, __ATOMIC_ACQUIRE) != 0) sched_yield();
}

void OwnerExclusion::readmit(ms__free_bins& bins) {
  __atomic_store_n(&bins.excluded, 0u, __ATOMIC_RELEASE);
}

}  // namespace metaspace
