// A seam for tests: make the N-th future reserve or commit fail as if the kernel had refused it,
// so that every error path above the os layer can be driven on purpose. Compiled in when
// METASPACE_FAULT_INJECTION is defined (all builds of this repository; off for a lean install).
#pragma once

#include <cstdint>

namespace metaspace::os {

enum class FaultPoint { kReserve = 0, kCommit = 1 };

// The `nth` call from now (1 = the next one) fails; 0 disarms.
void inject_fault(FaultPoint point, uint64_t nth);
// Number of calls through the point since the process started (successful or failed).
uint64_t fault_point_calls(FaultPoint point);
// True if this call must fail; called by the os layer only.
bool fault_now(FaultPoint point);

}  // namespace metaspace::os
