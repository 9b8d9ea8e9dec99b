// The micro loader the footprint tests and bench/bench_footprint.cpp use: one hidden class, a
// 528-byte Klass and 20 small non-class blocks (2 136 live bytes).
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstring>

namespace metaspace::test {

constexpr size_t kMicroKlassBytes = 528;
constexpr size_t kMicroNonClassBlocks[20] = {16, 24, 40, 88,  120, 64, 32, 48,  56,  72,
                                             200, 96, 16, 24, 136, 264, 40, 32, 160, 80};

// Allocates and touches the loader's blocks; false if an allocation failed.
inline bool fill_micro_loader(ms_loader_t* l) {
  void* k = ms_allocate(l, MS_SPACE_CLASS, kMicroKlassBytes);
  if (k == nullptr) return false;
  std::memset(k, 1, kMicroKlassBytes);
  for (size_t b : kMicroNonClassBlocks) {
    void* p = ms_allocate(l, MS_SPACE_NONCLASS, b);
    if (p == nullptr) return false;
    std::memset(p, 1, b);
  }
  return true;
}

}  // namespace metaspace::test
