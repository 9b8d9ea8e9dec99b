// Storage for objects whose address is a handle: an address handed out here is never handed out
// again in this process, so a stale handle can never name a newer object (docs/guarantees.md).
//
// Each object gets whole pages of a range reserved for these objects; its pages are made
// read-write when it is taken and given back (madvise, then PROT_NONE) when it is returned, but
// its addresses stay reserved. The price is address space only: a page per object ever made
// (4 KiB for a metaspace, whose object is smaller), no memory once returned; the ranges are
// reserved 16 MiB at a time (the first when the library is loaded), and returned pages merge into one kernel mapping with their
// returned neighbours. Not in a hot path: a mutex.
#pragma once

#include <cstddef>

namespace metaspace::os::unique_addresses {

// Page-aligned, zeroed, read-write storage for `bytes`. Throws std::bad_alloc when no address
// space is left.
void* take(size_t bytes);
// Gives back the memory of what take(bytes) returned; the addresses stay reserved, reading them
// faults.
void give_back(void* p, size_t bytes) noexcept;

}  // namespace metaspace::os::unique_addresses
