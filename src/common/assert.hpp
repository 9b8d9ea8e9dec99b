// Preconditions and internal invariants, checked where it is cheap to be wrong loudly.
//
// MS_ASSERT is on in the debug and sanitizer builds (METASPACE_ASSERTS, set by CMake) and compiles
// to nothing in release builds, the way HotSpot's `assert` (DEBUG_ONLY) and mimalloc's
// `mi_assert_internal` do: the hot path pays nothing in production, every test build checks.
// A failed assertion is a bug in the library (or memory smashed by the caller), never bad input:
// bad input gets an error code. It prints where and why, then aborts.
#pragma once

namespace metaspace {
[[noreturn]] void assert_failed(const char* file, int line, const char* condition,
                                const char* format, ...) __attribute__((format(printf, 4, 5)));
}  // namespace metaspace

#ifdef METASPACE_ASSERTS
#define MS_ASSERT(cond, ...)                                                     \
  do {                                                                           \
    if (__builtin_expect(!(cond), 0)) {                                          \
      ::metaspace::assert_failed(__FILE__, __LINE__, #cond, "" __VA_ARGS__);     \
    }                                                                            \
  } while (0)
#define MS_DEBUG_ONLY(code) code
#else
#define MS_ASSERT(cond, ...) ((void)0)
#define MS_DEBUG_ONLY(code)
#endif
