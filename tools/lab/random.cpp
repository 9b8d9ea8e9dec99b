#include "random.hpp"

#include <cmath>
#include <limits>

namespace lab {

std::uint64_t Random::between(std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t span = hi - lo;
  if (span == std::numeric_limits<std::uint64_t>::max()) return next();
  const std::uint64_t n = span + 1;
  // Reject the top partial bucket so that every value is equally likely.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t r;
  do {
    r = next();
  } while (r >= limit);
  return lo + r % n;
}

double Random::exponential(double mean) { return -mean * std::log1p(-unit()); }

}  // namespace lab
