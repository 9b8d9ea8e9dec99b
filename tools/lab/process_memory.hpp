#pragma once

#include <cstddef>

namespace lab {

// The real figures of this process, from /proc/self.
std::size_t resident_bytes();  // VmRSS
std::size_t mapping_count();   // lines of /proc/self/maps

}  // namespace lab
