// Preconditions and internal invariants, checked where it is cheap to be wrong loudly.
//
// MS_ASSERT is on in the debug and sanitizer builds (METASPACE_ASSERTS, set by CMake) and compiles
// to nothing in release builds, the way HotSpot's `assert` (DEBUG_ONLY) and mimalloc's
// `mi_assert_internal` do: the hot path pays nothing in production, every test build checks.
// A failed assertion is a bug in the library (or memory smashed by the caller), never bad input:
// bad input gets an error code. It prints where and why, then aborts.
//
// MS_ASSERT_LOCKED(lock) opens every `*_locked` function: the calling thread holds `lock`. It
// takes a metaspace::Mutex (common/mutex.hpp) or a LoaderLock (loader/loader_lock.hpp), which
// record their holder in assert builds in one shared LockOwner (common/lock_owner.hpp), or a
// std::mutex, whose holder glibc records in the mutex itself (the kernel thread id, in every kind
// of mutex it locks).
#pragma once

#include <cstdint>
#include <mutex>

namespace metaspace {
[[noreturn]] void assert_failed(const char* file, int line, const char* condition,
                                const char* format, ...) __attribute__((format(printf, 4, 5)));

// A number for the calling thread, from 1 up in the order threads first ask, never 0: what the
// lock types record as their holder in assert builds. The thread that forks keeps its number in
// the child (a kernel thread id does not).
uint32_t current_thread_number();
// Whether the calling thread holds `m` (glibc only: elsewhere true, nothing to read).
bool held_by_current_thread(std::mutex& m);
}  // namespace metaspace

#ifdef METASPACE_ASSERTS
#define MS_ASSERT(cond, ...)                                                     \
  do {                                                                           \
    if (__builtin_expect(!(cond), 0)) {                                          \
      ::metaspace::assert_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__);     \
    }                                                                            \
  } while (0)
#define MS_DEBUG_ONLY(code) code
#define MS_ASSERT_LOCKED(lock)                                                   \
  MS_ASSERT(::metaspace::held_by_current_thread(lock), "the calling thread does not hold %s", \
            #lock)
#else
#define MS_ASSERT(cond, ...) ((void)0)
#define MS_DEBUG_ONLY(code)
#define MS_ASSERT_LOCKED(lock) ((void)0)
#endif
