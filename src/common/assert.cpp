#include "common/assert.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace metaspace {

void assert_failed(const char* file, int line, const char* condition, const char* format, ...) {
  std::fprintf(stderr, "libmetaspace: assertion failed at %s:%d: %s", file, line, condition);
  if (format != nullptr && format[0] != '\0') {
    std::fputs(": ", stderr);
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
  }
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace metaspace
