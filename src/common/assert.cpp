#include "common/assert.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace metaspace {

namespace {
std::atomic<uint32_t> g_thread_numbers{0};
constinit thread_local uint32_t t_thread_number = 0;
}  // namespace

uint32_t current_thread_number() {
  while (t_thread_number == 0) {
    t_thread_number = g_thread_numbers.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  return t_thread_number;
}

bool held_by_current_thread(std::mutex& m) {
#ifdef __GLIBC__
  // glibc writes the owner's thread id after it takes the mutex and clears it before it lets go,
  // so only the holder can read its own id here. (Lock elision, off unless a tunable enables it,
  // would take the mutex without writing it.)
  return __atomic_load_n(&m.native_handle()->__data.__owner, __ATOMIC_RELAXED) == gettid();
#else
  (void)m;
  return true;
#endif
}

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
