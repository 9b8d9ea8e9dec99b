#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace lab {

// Deterministic random numbers for the workload. The engine (mt19937_64) is fully specified by the
// C++ standard, but the std:: distributions are not, so the derived distributions are written here:
// a given --seed then produces the same workload with every standard library.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t next() { return engine_(); }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform integer in [lo, hi] (inclusive), without modulo bias.
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi);

  bool chance(double p) { return unit() < p; }

  // Exponentially distributed with the given mean (inverse transform).
  double exponential(double mean);

  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      std::size_t j = static_cast<std::size_t>(between(0, i - 1));
      std::swap(v[i - 1], v[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace lab
