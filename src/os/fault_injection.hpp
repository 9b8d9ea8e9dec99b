// A seam for tests: make the N-th future call through a point fail as if the kernel (or, for
// kBookkeeping, the allocator of the library's own bookkeeping) had refused it, so that every
// error path above the os layer can be driven on purpose. Compiled in when
// METASPACE_FAULT_INJECTION is defined (all builds of this repository; off for a lean install).
#pragma once

#include <cstdint>

namespace metaspace::os {

enum class FaultPoint {
  kReserve = 0,      // mmap of address space
  kCommit = 1,       // making memory usable (mprotect read-write)
  kUncommit = 2,     // giving memory back (madvise)
  kProtect = 3,      // taking access away (mprotect PROT_NONE, checked mode)
  kRelease = 4,      // munmap
  kBookkeeping = 5,  // memory for the library's own structures
};
inline constexpr int kFaultPoints = 6;

// The `nth` call from now (1 = the next one) fails; 0 disarms.
void inject_fault(FaultPoint point, uint64_t nth);
// Number of calls through the point since the process started (successful or failed).
uint64_t fault_point_calls(FaultPoint point);
// True if this call must fail; called by the os layer only.
bool fault_now(FaultPoint point);

}  // namespace metaspace::os
