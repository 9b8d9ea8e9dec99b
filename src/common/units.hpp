// Size arithmetic shared by every layer. Sizes are bytes throughout the library and every variable
// carries its unit in its name (`*_bytes`); words appear only where a bin is indexed by them.
#pragma once

#include "common/assert.hpp"

#include <cstddef>
#include <cstdint>

namespace metaspace {

constexpr size_t kWordBytes = 8;
constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;
constexpr size_t GiB = 1024 * MiB;

constexpr bool is_power_of_2(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

constexpr size_t align_up(size_t x, size_t alignment) {
  return (x + alignment - 1) & ~(alignment - 1);
}
constexpr size_t align_down(size_t x, size_t alignment) { return x & ~(alignment - 1); }

inline char* align_up(char* p, size_t alignment) {
  return reinterpret_cast<char*>(align_up(reinterpret_cast<uintptr_t>(p), alignment));
}
inline char* align_down(char* p, size_t alignment) {
  return reinterpret_cast<char*>(align_down(reinterpret_cast<uintptr_t>(p), alignment));
}
inline bool is_aligned(const void* p, size_t alignment) {
  return (reinterpret_cast<uintptr_t>(p) & (alignment - 1)) == 0;
}

// The smallest n with 2^n ≥ x: the ceiling of log2 (ChunkGeometry::level_fitting relies on
// rounding up, the narrow pointer bit count too).
constexpr unsigned log2_ceil(size_t x) {
  unsigned n = 0;
  while ((size_t{1} << n) < x) n++;
  return n;
}

// log2 of a power of 2 (shifts, geometry): anything else is a bug of the caller.
constexpr unsigned log2_of_power_of_2(size_t x) {
  MS_ASSERT(x != 0 && (x & (x - 1)) == 0, "%zu is not a power of 2", x);
  return log2_ceil(x);
}

}  // namespace metaspace
