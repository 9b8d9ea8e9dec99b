// Keeps a loader owner's inline free and reuse (metaspace/detail/fast_path.h: ms_deallocate, the
// reuse branch of ms_allocate) out of the exact-size bins while another thread walks them
// (ms_verify), without an atomic read-modify-write or a fence on the owner's side.
//
// The owner: store busy = 1, load excluded; if it is set, busy = 0 and the out-of-line path
// (which waits on the loader's lock, held by the walker). The walker: store excluded = 1, then
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full memory barrier on every CPU
// that runs a thread of this process, then waits for busy == 0. The barrier orders the owner's
// store before its load wherever the owner is, so either the owner sees `excluded` or the walker
// sees `busy` (Dekker's argument with the owner's fence moved to the rare side). The owner thus
// pays no lock-prefixed instruction, which a LoaderLock would cost on every free.
//
// Where membarrier is unavailable (kernels before 4.3, seccomp filters) `available()` is false
// and the arena never publishes its bins: every free and reuse then takes the locked path.
#pragma once

#include <metaspace/detail/loader_head.h>

namespace metaspace {

class OwnerExclusion {
 public:
  // Whether the kernel offers membarrier (os/process_barrier.hpp); cheap after the first call.
  static bool available();

  // The walker's side: on return the owner is outside its inline paths and stays out until the
  // guard dies. Caller holds the loader's lock (so the owner's out-of-line paths are out too).
  explicit OwnerExclusion(ms__free_bins& bins);
  ~OwnerExclusion();
  OwnerExclusion(const OwnerExclusion&) = delete;
  OwnerExclusion& operator=(const OwnerExclusion&) = delete;

  // The same for many owners with one barrier (fork, where a barrier per loader would make the
  // fork's cost grow with the live loaders): exclude() each, then os::process_barrier() once, then
  // wait_until_out() each; readmit() each to end it.
  static void exclude(ms__free_bins& bins) {
    __atomic_store_n(&bins.excluded, 1u, __ATOMIC_SEQ_CST);
  }
  static void wait_until_out(const ms__free_bins& bins);
  static void readmit(ms__free_bins& bins) {
    __atomic_store_n(&bins.excluded, 0u, __ATOMIC_RELEASE);
  }

 private:
  ms__free_bins& bins_;
};

}  // namespace metaspace
