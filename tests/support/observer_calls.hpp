// The calls a monitoring thread makes with a metaspace handle, chosen by index: 0 ms_get_usage,
// 1 ms_get_stats, anything else ms_verify. The concurrency tests and the fuzzer race them against
// ms_destroy of the same metaspace.
#pragma once

#include <metaspace/metaspace.h>

namespace metaspace::test {

inline ms_error_t observe(ms_metaspace_t* ms, int which) {
  if (which == 0) {
    ms_usage_t u{};
    u.size = sizeof u;
    return ms_get_usage(ms, &u);
  }
  if (which == 1) {
    ms_stats_t st;
    return ms_get_stats(ms, &st);
  }
  return ms_verify(ms);
}

}  // namespace metaspace::test
