#include "api/handle_secret.hpp"

#include <sys/random.h>

#include <ctime>
#include <mutex>

// Non-zero from the start: before the first ms_create no loader exists, and a word equal to its
// own address (a self-pointing list head) must not pass the fast path's check even then.
extern "C" {
uintptr_t ms__handle_secret = 0x9E3779B97F4A7C17u;
}

namespace metaspace::api {

void choose_handle_secret() {
  static std::once_flag once;
  std::call_once(once, [] {
    uintptr_t random = 0;
    if (getrandom(&random, sizeof random, GRND_NONBLOCK) != sizeof random) {
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      random = static_cast<uintptr_t>(now.tv_nsec) * 0x9E3779B97F4A7C15u ^
               reinterpret_cast<uintptr_t>(&now);
    }
    // Low bits set: never 0, and never an aligned offset (a handle is 8-byte aligned, so no
    // pointer into the same object equals handle ^ secret).
    ms__handle_secret = random | 7u;
  });
}

}  // namespace metaspace::api
