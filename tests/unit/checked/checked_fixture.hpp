// Shared by the checked-mode tests: a checked metaspace, the canary a fence carries, and the
// error text as a string.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace metaspace::test {

inline ms_metaspace_t* create_checked(ms_reclaim_t reclaim = MS_RECLAIM_BALANCED,
                                      size_t class_alignment = 8) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = reclaim;
  s.class_alignment_bytes = class_alignment;
  s.class_space_bytes = 64 << 20;
  s.checked = 1;
  ms_metaspace_t* ms = ms_create(&s);
  EXPECT_NE(ms, nullptr) << ms_last_error_text();
  return ms;
}

// The live canary of the fence behind a block of `bytes` (rounded to 8) at p: a constant
// ("METAMETA") xor'ed with the fence's address, as arena/fence.hpp defines it.
inline uint64_t live_canary(const void* p, size_t bytes) {
  uintptr_t fence = reinterpret_cast<uintptr_t>(p) + ((bytes + 7) & ~size_t{7});
  return 0x4D4554414D455441ull ^ fence;
}

inline std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string ptr(const void* p) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

inline std::string last_error() { return ms_last_error_text(); }

}  // namespace metaspace::test
