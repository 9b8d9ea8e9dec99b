// verify() functions return false on the first broken invariant and leave the reason in the
// thread's last error (MS_ERR_CORRUPTED), so a test failure names what broke and where.
#pragma once

#include "common/error.hpp"

#define MS_VERIFY(cond, ...)                                                              \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      ::metaspace::fail(MS_ERR_CORRUPTED, "%s:%d: %s: ", __FILE__, __LINE__, #cond);      \
      ::metaspace::append_error(__VA_ARGS__);                                             \
      return false;                                                                       \
    }                                                                                     \
  } while (0)

namespace metaspace {
// Appends a detail sentence to the last error text.
void append_error(const char* format, ...) __attribute__((format(printf, 1, 2)));
}  // namespace metaspace
