// A full memory barrier on every CPU that runs a thread of this process, issued by one thread:
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED). It lets a rare side (ms_verify reading a
// loader's bins, fork closing the gate) order itself against a frequent side that pays only a
// plain store and load, no fence (Dekker's argument with the fence moved to the rare side): the
// frequent side stores its flag and loads the rare side's; the rare side stores its flag, issues
// the barrier, then loads the frequent side's. Either the frequent side sees the rare flag or
// the rare side sees the frequent one.
#pragma once

namespace metaspace::os {

// Whether the kernel offers a process-wide barrier (membarrier's expedited or global command;
// asked once, thread-safe, cheap); false before 4.3 or under a seccomp filter that refuses
// membarrier. Then the frequent side must fence itself.
bool process_barrier_available();
// Only after process_barrier_available() returned true. The first call registers the process for
// the expedited command (slow, once); where that is refused it falls back to the global command.
void process_barrier();

}  // namespace metaspace::os
