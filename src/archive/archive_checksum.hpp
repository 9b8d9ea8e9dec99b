// The archive's checksum: a 64-bit hash written here (the library is libc-only), in the style of
// xxHash64: four independent lanes over 32-byte stripes (multiply, rotate, multiply), so that the
// data checksum of a large archive runs at memory speed rather than a byte at a time as FNV-1a
// would (docs/archive.md). Not cryptographic: it finds damage, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace::archive {

class Checksum {
 public:
  void add(const void* data, size_t bytes);
  uint64_t value() const;

 private:
  uint64_t lanes_[4] = {0x9E3779B185EBCA87ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                        0x27D4EB2F165667C5ull};
  uint64_t total_bytes_ = 0;
  unsigned char pending_[32] = {};
  size_t pending_bytes_ = 0;
};

uint64_t checksum_of(const void* data, size_t bytes);

}  // namespace metaspace::archive
