#include "workload.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "params.hpp"

namespace lab {
namespace {

constexpr std::size_t kWordBytes = 8;

// Sizes skewed towards the low end of [lo, hi] (the minimum of two uniform draws): real metadata
// clusters at the small sizes of each bucket (Method ≈ 11 words in 9..16, say).
std::size_t low_skewed(Random& r, std::size_t lo, std::size_t hi) {
  std::uint64_t a = r.between(lo, hi);
  std::uint64_t b = r.between(lo, hi);
  return static_cast<std::size_t>(a < b ? a : b);
}

double low_skewed_mean(std::size_t lo, std::size_t hi) {
  const double n = static_cast<double>(hi - lo + 1);
  return static_cast<double>(lo) + (n - 1) * (2 * n - 1) / (6 * n);
}

// Mean of an exponential with mean `mu` truncated to [0, limit] (the Klass body after redrawing).
double truncated_exponential_mean(double mu, double limit) {
  const double tail = std::exp(-limit / mu);
  return mu - limit * tail / (1 - tail);
}

// The untruncated mean whose truncation to [0, limit] has mean `target` (< limit / 2): bisection,
// as the truncated mean grows monotonically with mu.
double solve_truncated_exponential(double target, double limit) {
  double lo = 1e-9, hi = 1e9;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (truncated_exponential_mean(mid, limit) < target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double large_fraction(const WorkloadParams& p) {
  return 1.0 - p.small_fraction - p.medium_fraction - p.mid_fraction;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

double fixed_buckets_mean_words(const WorkloadParams& p) {
  return p.small_fraction * 5.0 + p.medium_fraction * low_skewed_mean(9, 16) +
         p.mid_fraction * low_skewed_mean(17, 40);
}

void WorkloadParams::add_flags(ParamSet& params) {
  params.add("--seed", seed, "random seed: the same seed gives the same workload", {.max = UINT64_MAX});
  params.add("--klass-mean-words", klass_mean_words, "mean Klass (class-space block) size in words");
  params.add("--klass-min-words", klass_min_words, "smallest Klass in words");
  params.add("--klass-cluster-max-words", klass_cluster_max_words, "upper end of the usual Klass sizes in words");
  params.add("--klass-tail-fraction", klass_tail_fraction, "fraction of Klasses in the large tail");
  params.add("--klass-tail-max-words", klass_tail_max_words, "largest Klass of the tail in words");
  params.add("--allocs-per-class", allocs_per_class, "mean allocations per class, Klass included");
  params.add("--allocs-spread", allocs_spread, "allocations per class vary uniformly by ± this");
  params.add("--nonclass-words-per-class", nonclass_words_per_class, "mean non-class words per class");
  params.add("--small-fraction", small_fraction, "fraction of non-class blocks of 2..8 words");
  params.add("--medium-fraction", medium_fraction, "fraction of non-class blocks of 9..16 words");
  params.add("--mid-fraction", mid_fraction, "fraction of non-class blocks of 17..40 words (the rest: > 40)");
  params.add("--dealloc-fraction", dealloc_fraction, "fraction of non-class blocks freed again prematurely");
  params.add("--micro-klass-words", micro_klass_words, "Klass size of a micro-loader class in words");
  params.add("--micro-nonclass-min-words", micro_nonclass_min_words, "least non-class words of a micro-loader class");
  params.add("--micro-nonclass-max-words", micro_nonclass_max_words, "most non-class words of a micro-loader class");
}

void WorkloadParams::validate() const {
  require(klass_min_words >= 1, "--klass-min-words must be at least 1");
  require(klass_cluster_max_words > klass_min_words, "--klass-cluster-max-words must exceed --klass-min-words");
  require(klass_tail_max_words >= klass_cluster_max_words,
          "--klass-tail-max-words must be at least --klass-cluster-max-words");
  require(klass_tail_fraction >= 0 && klass_tail_fraction < 1, "--klass-tail-fraction must be in [0, 1)");
  require(allocs_per_class >= 2, "--allocs-per-class must be at least 2 (the Klass and one non-class block)");
  require(allocs_spread < allocs_per_class - 1, "--allocs-spread must be smaller than --allocs-per-class - 1");
  require(small_fraction >= 0 && medium_fraction >= 0 && mid_fraction >= 0,
          "the size-mix fractions must not be negative");
  require(large_fraction(*this) > 1e-9,
          "--small-fraction + --medium-fraction + --mid-fraction must leave room for blocks > 40 words");
  require(dealloc_fraction >= 0 && dealloc_fraction <= 1, "--dealloc-fraction must be in [0, 1]");
  require(micro_klass_words >= 1, "--micro-klass-words must be at least 1");
  require(micro_nonclass_min_words >= 1 && micro_nonclass_max_words >= micro_nonclass_min_words,
          "--micro-nonclass-min-words must be >= 1 and <= --micro-nonclass-max-words");
  const double tail_mean = (klass_cluster_max_words + klass_tail_max_words) / 2.0;
  const double body_mean = (klass_mean_words - klass_tail_fraction * tail_mean) / (1 - klass_tail_fraction);
  require(body_mean > klass_min_words && body_mean < (klass_min_words + klass_cluster_max_words) / 2.0,
          "--klass-mean-words cannot be reached with --klass-min-words, --klass-cluster-max-words and the tail");
  const double block_mean = nonclass_words_per_class / static_cast<double>(allocs_per_class - 1);
  const double large_mean = (block_mean - fixed_buckets_mean_words(*this)) / large_fraction(*this);
  require(large_mean > Workload::kLargeMinWords + 1 && large_mean < Workload::kLargeMaxWords / 4,
          "--nonclass-words-per-class does not fit the size mix (the > 40-word blocks would need a mean of " +
              std::to_string(large_mean) + " words)");
}

std::size_t ClassShape::total_bytes() const {
  std::size_t sum = klass_bytes;
  for (auto b : nonclass_bytes) sum += b;
  return sum;
}

Workload::Workload(const WorkloadParams& params, std::uint64_t stream)
    : params_(params), random_(params.seed + stream * 0x9E3779B97F4A7C15ull) {
  params_.validate();
  const double tail_mean = (params_.klass_cluster_max_words + params_.klass_tail_max_words) / 2.0;
  const double body_mean =
      (params_.klass_mean_words - params_.klass_tail_fraction * tail_mean) / (1 - params_.klass_tail_fraction);
  // Redrawing above the cluster would pull the mean down; aim the untruncated mean higher.
  klass_body_excess_words_ =
      solve_truncated_exponential(body_mean - static_cast<double>(params_.klass_min_words),
                                  static_cast<double>(params_.klass_cluster_max_words - params_.klass_min_words));
  const double block_mean = params_.nonclass_words_per_class / static_cast<double>(params_.allocs_per_class - 1);
  large_mean_words_ = (block_mean - fixed_buckets_mean_words(params_)) / large_fraction(params_);
}

std::size_t Workload::draw_klass_words() {
  if (random_.chance(params_.klass_tail_fraction)) {
    return random_.between(params_.klass_cluster_max_words, params_.klass_tail_max_words);
  }
  // Redrawing keeps the cluster bounded (the constructor compensates the mean for it).
  for (;;) {
    double w = static_cast<double>(params_.klass_min_words) + random_.exponential(klass_body_excess_words_);
    if (w <= static_cast<double>(params_.klass_cluster_max_words)) return static_cast<std::size_t>(w + 0.5);
  }
}

std::size_t Workload::draw_nonclass_words() {
  const double u = random_.unit();
  if (u < params_.small_fraction) return random_.between(2, 8);
  if (u < params_.small_fraction + params_.medium_fraction) return low_skewed(random_, 9, 16);
  if (u < params_.small_fraction + params_.medium_fraction + params_.mid_fraction) return low_skewed(random_, 17, 40);
  for (;;) {
    double w = kLargeMinWords + random_.exponential(large_mean_words_ - kLargeMinWords);
    if (w <= kLargeMaxWords) return static_cast<std::size_t>(w + 0.5);
  }
}

void Workload::next_class(ClassShape& out) {
  out.klass_bytes = draw_klass_words() * kWordBytes;
  const std::size_t nonclass = params_.allocs_per_class - 1;
  const std::size_t count = random_.between(nonclass - params_.allocs_spread, nonclass + params_.allocs_spread);
  out.nonclass_bytes.clear();
  out.dealloc_indices.clear();
  for (std::size_t i = 0; i < count; ++i) {
    out.nonclass_bytes.push_back(static_cast<std::uint32_t>(draw_nonclass_words() * kWordBytes));
    if (random_.chance(params_.dealloc_fraction)) out.dealloc_indices.push_back(static_cast<std::uint32_t>(i));
  }
}

void Workload::next_micro_class(ClassShape& out) {
  out.klass_bytes = params_.micro_klass_words * kWordBytes;
  out.nonclass_bytes.clear();
  out.dealloc_indices.clear();
  std::size_t remaining = random_.between(params_.micro_nonclass_min_words, params_.micro_nonclass_max_words);
  // A hidden class has a few methods and a constant pool: split its words into blocks from the
  // same size mix, the last block taking what is left.
  while (remaining > 0) {
    std::size_t w = draw_nonclass_words();
    if (w >= remaining) w = remaining;
    out.nonclass_bytes.push_back(static_cast<std::uint32_t>(w * kWordBytes));
    remaining -= w;
  }
}

}  // namespace lab
