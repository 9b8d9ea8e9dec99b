// Layer 2: which commit granules of a node are committed, one bit each.
//
// The mask is the truth about committed memory: chunks only cache a lower bound of their committed
// prefix, and the statistics count bits here, so `committed` in every report is exact.
//
// The mask does not own its bits: the node lays them out in its bookkeeping range (memory the
// library maps itself and counts as overhead, vspace/node_bookkeeping.hpp), so this layer needs no
// allocator and no heap. The words must be zero when the mask is made and live as long as it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace {

class CommitMask {
 public:
  // An empty mask (no granules) until one is assigned.
  CommitMask() = default;
  // `words` holds words_for(bytes / granule_bytes) zeroed words.
  CommitMask(const char* base, size_t bytes, size_t granule_bytes, uint64_t* words);
  static size_t words_for(size_t granules) { return (granules + 63) / 64; }

  size_t granule_bytes() const { return granule_bytes_; }
  size_t granules() const { return granules_; }
  size_t committed_granules() const { return committed_granules_; }
  size_t committed_bytes() const { return committed_granules_ * granule_bytes_; }

  bool is_committed(const void* p) const;
  // Committed bytes in [p, p + bytes); the range may start and end inside granules: a granule
  // counts with the part of it that lies in the range.
  size_t committed_bytes_in(const void* p, size_t bytes) const;

  // Both take granule-aligned ranges and return how many granules changed state.
  size_t mark_committed(const void* p, size_t bytes);
  size_t mark_uncommitted(const void* p, size_t bytes);

  // Granule index range [first, last) covering [p, p + bytes).
  size_t granule_index(const void* p) const;
  bool bit(size_t index) const { return (bits_[index / 64] >> (index % 64)) & 1; }

  // Recounts the bits; false if the cached count is wrong.
  bool verify() const;

 private:
  size_t set_range(size_t first, size_t last, bool value);

  const char* base_ = nullptr;
  size_t granule_bytes_ = 0;
  unsigned granule_shift_ = 0;
  size_t granules_ = 0;
  size_t committed_granules_ = 0;
  uint64_t* bits_ = nullptr;
};

}  // namespace metaspace
