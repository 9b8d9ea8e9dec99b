#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "random.hpp"

namespace lab {

class ParamSet;

// Every figure of docs/workload-model.md as a flag. Defaults: the "generated classes" row,
// which is the interleaved-loaders workload that HotSpot was measured on.
struct WorkloadParams {
  std::uint64_t seed = 42;

  // Klass (class-space block): min + exponential body, clustered below klass_cluster_max_words,
  // with a rare uniform tail up to klass_tail_max_words (big vtables/itables).
  double klass_mean_words = 71.5;
  std::size_t klass_min_words = 66;
  std::size_t klass_cluster_max_words = 128;  // 1 KiB
  double klass_tail_fraction = 0.005;
  std::size_t klass_tail_max_words = 512;

  // Allocations per class, counting the Klass; each class draws uniformly in mean ± spread.
  std::size_t allocs_per_class = 38;
  std::size_t allocs_spread = 8;
  double nonclass_words_per_class = 453;

  // Non-class block size mix (fractions of non-class allocations); the rest is > 40 words and its
  // mean is solved so that a class gets nonclass_words_per_class on average.
  double small_fraction = 0.40;   // 2..8 words (type arrays, MethodCounters, CP cache)
  double medium_fraction = 0.47;  // 9..16 words (Method, ConstMethod)
  double mid_fraction = 0.09;     // 17..40 words

  // Premature deallocations (class redefinition, linking), fraction of non-class allocations.
  double dealloc_fraction = 0.001;

  // Micro loaders (hidden classes, lambda forms): one small Klass and a little non-class data.
  std::size_t micro_klass_words = 66;
  std::size_t micro_nonclass_min_words = 120;
  std::size_t micro_nonclass_max_words = 320;

  void add_flags(ParamSet& params);
  // Throws std::invalid_argument with a message naming the flag when the combination is unusable.
  void validate() const;
};

// The blocks one class allocates: what the runtime asks of a loader's metaspace to load it.
struct ClassShape {
  std::size_t klass_bytes = 0;
  std::vector<std::uint32_t> nonclass_bytes;
  // Indices into nonclass_bytes of the blocks freed again right after the class is loaded.
  std::vector<std::uint32_t> dealloc_indices;

  std::size_t total_bytes() const;
  std::size_t allocations() const { return 1 + nonclass_bytes.size(); }
};

// Draws class shapes from the model. Deterministic for a given seed and call sequence.
class Workload {
 public:
  explicit Workload(const WorkloadParams& params, std::uint64_t stream = 0);

  // Fills `out` (reusing its storage) with the next ordinary class.
  void next_class(ClassShape& out);
  // Fills `out` with the next micro-loader class.
  void next_micro_class(ClassShape& out);

  const WorkloadParams& params() const { return params_; }
  // Mean size of the > 40-word bucket, solved from the flags.
  double large_mean_words() const { return large_mean_words_; }

  static constexpr std::size_t kLargeMinWords = 41;
  static constexpr std::size_t kLargeMaxWords = 8192;

 private:
  std::size_t draw_klass_words();
  std::size_t draw_nonclass_words();

  WorkloadParams params_;
  Random random_;
  double klass_body_excess_words_;
  double large_mean_words_;
};

// Mean block size, in words, of the fixed-shape buckets (small, medium, mid); shared with the
// solver for the large bucket and with the tests.
double fixed_buckets_mean_words(const WorkloadParams& p);

}  // namespace lab
