// Chunk levels: level 0 is a root chunk, each level below halves the size, down to 1 KiB.
// The root size is a setting (4 MiB as in JEP 387 → 13 levels; 16 MiB as HotSpot since JDK 21
// → 15 levels), so the level arithmetic lives in a small value object instead of constants.
#pragma once

#include <cstddef>

#include "common/units.hpp"

namespace metaspace {

constexpr size_t kMinChunkBytes = 1 * KiB;
constexpr int kMaxLevels = 17;  // 64 MiB root chunks

class ChunkGeometry {
 public:
  explicit ChunkGeometry(size_t root_bytes)
      : root_bytes_(root_bytes),
        root_shift_(log2_of_power_of_2(root_bytes)),
        levels_(static_cast<int>(root_shift_ - log2_of_power_of_2(kMinChunkBytes)) + 1) {}

  size_t root_bytes() const { return root_bytes_; }
  int levels() const { return levels_; }
  int highest_level() const { return levels_ - 1; }  // the smallest chunk
  bool valid(int level) const { return level >= 0 && level < levels_; }
  size_t bytes(int level) const { return root_bytes_ >> level; }

  // The level of the smallest chunk that holds `bytes` (bytes ≤ root size).
  int level_fitting(size_t bytes) const {
    size_t b = bytes < kMinChunkBytes ? kMinChunkBytes : bytes;
    return static_cast<int>(root_shift_ - log2_ceil(b));
  }

 private:
  size_t root_bytes_;
  unsigned root_shift_;
  int levels_;
};

}  // namespace metaspace
