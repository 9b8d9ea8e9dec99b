#include "arena/owner_exclusion.hpp"

#include <sched.h>

#include "common/assert.hpp"
#include "os/process_barrier.hpp"

namespace metaspace {

bool OwnerExclusion::available() { return os::process_barrier_available(); }

OwnerExclusion::OwnerExclusion(ms__free_bins& bins) : bins_(bins) {
  MS_ASSERT(available(), "bins published without membarrier");
  exclude(bins_);
  os::process_barrier();
  wait_until_out(bins_);
}

OwnerExclusion::~OwnerExclusion() { readmit(bins_); }

void OwnerExclusion::wait_until_out(const ms__free_bins& bins) {
  while (__atomic_load_n(&bins.busy, __ATOMIC_ACQUIRE) != 0) sched_yield();
}

}  // namespace metaspace
