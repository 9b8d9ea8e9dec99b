// The exception barrier of the C API: every extern "C" entry point runs its body through
// `barrier`, so that no C++ exception ever reaches a C, Rust or Go caller (for them it is
// undefined behaviour; for a C++ caller of a noexcept function, std::terminate).
//
// std::bad_alloc (the library's own bookkeeping could not be allocated) becomes
// MS_ERR_OUT_OF_MEMORY; anything else (a bug, or a callback that threw) MS_ERR_CORRUPTED. The
// code below the API releases its locks by RAII and changes shared state only after its
// allocations succeeded, so a caught exception leaves the metaspace as it was.
#pragma once

#include <metaspace/metaspace.h>

#include <exception>
#include <new>
#include <type_traits>

#include "common/error.hpp"
#include "os/fork_gate.hpp"

namespace metaspace::api {

// Returns what `body` returns, or `on_error` with the error recorded if it threw.
// The call runs inside the fork gate (os/fork_gate.hpp): a fork by another thread waits for it.
template <class R, class Body>
R barrier(const char* function, R on_error, Body&& body) noexcept {
  os::InsideLibrary inside;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    fail(MS_ERR_OUT_OF_MEMORY, "%s: the library's bookkeeping could not be allocated", function);
  } catch (const std::exception& e) {
    fail(MS_ERR_CORRUPTED, "%s: internal error: %s", function, e.what());
  } catch (...) {
    fail(MS_ERR_CORRUPTED, "%s: internal error: an exception (from a callback?)", function);
  }
  return on_error;
}

// For functions returning ms_error_t: the error code is the one just recorded.
template <class Body>
ms_error_t barrier_error(const char* function, Body&& body) noexcept {
  bool threw = true;
  ms_error_t e = barrier(function, MS_OK, [&] {
    ms_error_t result = body();
    threw = false;
    return result;
  });
  return threw ? ms_last_error() : e;
}

// For functions without a result: the error is only recorded.
template <class Body>
void barrier_void(const char* function, Body&& body) noexcept {
  barrier(function, 0, [&] {
    body();
    return 0;
  });
}

}  // namespace metaspace::api
