// GoogleTest assertions on the C API's results: a failure prints the library's own sentence.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#define ASSERT_MS_OK(expr) ASSERT_EQ((expr), MS_OK) << ms_last_error_text()

namespace metaspace::test {

// The loader's statistics; a failure to get them fails the test (and returns zeros).
inline ms_loader_stats_t loader_stats(ms_loader_t* l) {
  ms_loader_stats_t ls{};
  EXPECT_EQ(ms_loader_get_stats(l, &ls), MS_OK) << ms_last_error_text();
  return ls;
}

}  // namespace metaspace::test
