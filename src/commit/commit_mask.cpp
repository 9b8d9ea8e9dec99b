#include "commit/commit_mask.hpp"

#include <algorithm>
#include <bit>

#include "common/assert.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

CommitMask::CommitMask(const char* base, size_t bytes, size_t granule_bytes, uint64_t* words)
    : base_(base),
      granule_bytes_(granule_bytes),
      granule_shift_(log2_of_power_of_2(granule_bytes)),
      granules_(bytes / granule_bytes),
      bits_(words) {
  MS_ASSERT(words != nullptr, "commit mask at %p without storage", (const void*)base);
}

size_t CommitMask::granule_index(const void* p) const {
  return static_cast<size_t>(static_cast<const char*>(p) - base_) >> granule_shift_;
}

bool CommitMask::is_committed(const void* p) const { return bit(granule_index(p)); }

size_t CommitMask::committed_bytes_in(const void* p, size_t bytes) const {
  const char* start = static_cast<const char*>(p);
  const char* end = start + bytes;
  size_t total = 0;
  for (size_t g = granule_index(start); g < granules_; g++) {
    const char* g_start = base_ + (g << granule_shift_);
    if (g_start >= end) break;
    if (bit(g)) {
      const char* g_end = g_start + granule_bytes_;
      total += static_cast<size_t>(std::min(g_end, end) - std::max(g_start, start));
    }
  }
  return total;
}

size_t CommitMask::set_range(size_t first, size_t last, bool value) {
  size_t changed = 0;
  for (size_t g = first; g < last; g++) {
    uint64_t m = uint64_t{1} << (g % 64);
    uint64_t& word = bits_[g / 64];
    if (((word & m) != 0) != value) {
      word ^= m;
      changed++;
    }
  }
  if (value) {
    committed_granules_ += changed;
  } else {
    committed_granules_ -= changed;
  }
  return changed;
}

size_t CommitMask::mark_committed(const void* p, size_t bytes) {
  MS_ASSERT(is_aligned(p, granule_bytes_) && bytes % granule_bytes_ == 0,
            "range %p + %zu not granule-aligned (%zu)", p, bytes, granule_bytes_);
  size_t first = granule_index(p);
  return set_range(first, first + (bytes >> granule_shift_), true);
}

size_t CommitMask::mark_uncommitted(const void* p, size_t bytes) {
  MS_ASSERT(is_aligned(p, granule_bytes_) && bytes % granule_bytes_ == 0,
            "range %p + %zu not granule-aligned (%zu)", p, bytes, granule_bytes_);
  size_t first = granule_index(p);
  return set_range(first, first + (bytes >> granule_shift_), false);
}

bool CommitMask::verify() const {
  size_t count = 0;
  for (size_t i = 0; i < words_for(granules_); i++) {
    count += static_cast<size_t>(std::popcount(bits_[i]));
  }
  MS_VERIFY(count == committed_granules_, "commit mask at %p: %zu bits set, counter says %zu",
            (const void*)base_, count, committed_granules_);
  return true;
}

}  // namespace metaspace
