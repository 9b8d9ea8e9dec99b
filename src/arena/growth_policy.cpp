#include "arena/growth_policy.hpp"

namespace metaspace {

GrowthPolicy::GrowthPolicy(const std::vector<size_t>& sequence_bytes,
                           const ChunkGeometry& geometry) {
  for (size_t bytes : sequence_bytes) {
    if (steps_ == kMaxSteps) break;  // longer sequences are cut (ours have at most 9 steps)
    size_t clamped = bytes > geometry.root_bytes() ? geometry.root_bytes() : bytes;
    levels_[steps_++] = static_cast<int8_t>(geometry.level_fitting(clamped));
  }
}

const std::vector<size_t>& GrowthPolicy::default_sequence(ms_loader_kind_t kind,
                                                          ms_space_t space) {
  static const std::vector<size_t> standard_nonclass = {8 * KiB,  16 * KiB,  32 * KiB,
                                                        64 * KiB, 128 * KiB, 256 * KiB};
  static const std::vector<size_t> standard_class = {2 * KiB,  2 * KiB,  4 * KiB, 8 * KiB,
                                                     16 * KiB, 32 * KiB, 64 * KiB};
  static const std::vector<size_t> boot_nonclass = {4 * MiB, 1 * MiB};
  static const std::vector<size_t> boot_class = {256 * KiB};
  static const std::vector<size_t> micro_nonclass = {1 * KiB,  2 * KiB,  4 * KiB, 8 * KiB,
                                                     16 * KiB, 32 * KiB, 64 * KiB};
  static const std::vector<size_t> micro_class = {1 * KiB, 2 * KiB, 4 * KiB, 8 * KiB, 16 * KiB};
  bool klass = space == MS_SPACE_CLASS;
  switch (kind) {
    case MS_LOADER_BOOT: return klass ? boot_class : boot_nonclass;
    case MS_LOADER_MICRO: return klass ? micro_class : micro_nonclass;
    case MS_LOADER_STANDARD: break;
  }
  return klass ? standard_class : standard_nonclass;
}

GrowthPolicy GrowthPolicy::for_loader(ms_loader_kind_t kind, ms_space_t space,
                                      const ChunkGeometry& geometry) {
  return GrowthPolicy(default_sequence(kind, space), geometry);
}

}  // namespace metaspace
