#pragma once

#include <cstddef>
#include <memory_resource>

namespace lab {

// Memory the lab needs for itself while it measures a backend (the trace player's tables), kept in
// mappings of its own so that it never lands in the malloc heap a malloc-family backend reports as
// its committed, and so that its resident pages can be taken out of the process's RSS.
// Not thread-safe: the replay that uses it runs on one thread.
std::pmr::memory_resource* harness_memory();

// Resident bytes of harness_memory()'s mappings (mincore over each mapping).
std::size_t harness_resident_bytes();

}  // namespace lab
