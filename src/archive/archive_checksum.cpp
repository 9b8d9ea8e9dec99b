#include "archive/archive_checksum.hpp"

#include <cstring>

namespace metaspace::archive {

namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;

inline uint64_t rotl(uint64_t x, unsigned r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t round(uint64_t lane, uint64_t word) {
  return rotl(lane + word * kPrime2, 31) * kPrime1;
}

inline void stripe(uint64_t lanes[4], const unsigned char* p) {
  uint64_t w[4];
  std::memcpy(w, p, sizeof w);  // unaligned-safe; compiles to plain loads
  for (int i = 0; i < 4; i++) lanes[i] = round(lanes[i], w[i]);
}

}  // namespace

void Checksum::add(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_bytes_ += bytes;
  if (pending_bytes_ > 0) {
    size_t take = sizeof pending_ - pending_bytes_;
    if (take > bytes) take = bytes;
    std::memcpy(pending_ + pending_bytes_, p, take);
    pending_bytes_ += take;
    p += take;
    bytes -= take;
    if (pending_bytes_ < sizeof pending_) return;
    stripe(lanes_, pending_);
    pending_bytes_ = 0;
  }
  for (; bytes >= 32; p += 32, bytes -= 32) stripe(lanes_, p);
  std::memcpy(pending_, p, bytes);
  pending_bytes_ = bytes;
}

uint64_t Checksum::value() const {
  uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
  h ^= total_bytes_ * kPrime1;
  // The tail, a byte at a time (FNV-1a step), then a final avalanche.
  for (size_t i = 0; i < pending_bytes_; i++) h = (h ^ pending_[i]) * 0x100000001B3ull;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime1;
  h ^= h >> 32;
  return h;
}

uint64_t checksum_of(const void* data, size_t bytes) {
  Checksum c;
  c.add(data, bytes);
  return c.value();
}

}  // namespace metaspace::archive
