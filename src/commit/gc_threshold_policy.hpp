// Where the GC threshold goes after a collection: HotSpot's MinMetaspaceFreeRatio,
// MaxMetaspaceFreeRatio and MinMetaspaceExpansion, as one pure function of the committed level.
//
// Reaching the threshold tells the runtime to collect (its GC callback). Afterwards the threshold
// is moved into a band around what is still committed, c:
//   at least  c / (1 - min_free)   so that min_free of it is free: the next collection waits
//                                  until the program grew by that share, not one granule;
//   at least  c + min_expansion    so that a tiny metaspace does not collect at every granule;
//   at most   c / (1 - max_free)   so that a metaspace that shrank collects again soon;
// rounded up to a granule and never above the cap (max_committed_bytes): a request that would
// pass the cap is told to the runtime too, so the runtime always hears before MS_ERR_LIMIT.
// A threshold already inside the band stays where it is, so applying the policy twice (the
// runtime from its callback, the library after it) moves it once.
#pragma once

#include <cstddef>

namespace metaspace {

struct GcThresholdPolicy {
  // All three 0 (the default here; the settings default to 40 / 70 / 256 KiB): the threshold
  // stays where the runtime set it, and after a crossing it is reported again only once
  // committed fell below it and rose again (cap refusals are reported all the same).
  unsigned min_free_percent = 0;             // 0..99
  unsigned max_free_percent = 0;             // min_free_percent..100; 100: never lowered
  size_t min_expansion_bytes = 0;
  size_t granule_bytes = 4096;               // power of 2

  bool fixed() const {
    return min_free_percent == 0 && max_free_percent == 0 && min_expansion_bytes == 0;
  }
  // The threshold after a collection that left `committed` bytes committed.
  size_t next_threshold(size_t committed, size_t current, size_t cap_bytes) const;
};

}  // namespace metaspace
