#include "commit/gc_threshold_policy.hpp"

#include <algorithm>
#include <cstdint>

#include "common/assert.hpp"

namespace metaspace {

namespace {

// committed / (1 - percent/100), saturating at SIZE_MAX.
size_t with_free_share(size_t committed, unsigned percent) {
  if (percent >= 100) return SIZE_MAX;
  size_t d = 100 - percent;
  if (committed <= SIZE_MAX / 100) return committed * 100 / d;
  size_t q = committed / d;  // huge levels: a little coarser, never wrapping
  return q > SIZE_MAX / 100 ? SIZE_MAX : q * 100;
}

size_t saturating_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

size_t align_up_saturating(size_t v, size_t granule) {
  if (v > SIZE_MAX - (granule - 1)) return SIZE_MAX & ~(granule - 1);
  return (v + granule - 1) & ~(granule - 1);
}

}  // namespace

size_t GcThresholdPolicy::next_threshold(size_t committed, size_t current,
                                         size_t cap_bytes) const {
  if (fixed()) return current;
  MS_ASSERT(min_free_percent <= 99 && max_free_percent >= min_free_percent &&
                max_free_percent <= 100,
            "free ratios %u..%u", min_free_percent, max_free_percent);
  MS_ASSERT(granule_bytes != 0 && (granule_bytes & (granule_bytes - 1)) == 0, "granule %zu",
            granule_bytes);
  size_t lo = std::max(with_free_share(committed, min_free_percent),
                       saturating_add(committed, min_expansion_bytes));
  size_t hi = std::max(with_free_share(committed, max_free_percent), lo);
  size_t t = align_up_saturating(std::clamp(current, lo, hi), granule_bytes);
  if (cap_bytes != 0) t = std::min(t, cap_bytes);
  return t;
}

}  // namespace metaspace
