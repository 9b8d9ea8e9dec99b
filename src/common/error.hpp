// The calling thread's last error: every failing call records a code and a sentence, so a runtime
// can report *why* an allocation failed without the library ever printing or aborting.
#pragma once

#include <metaspace/types.h>

namespace metaspace {

// Records the error for this thread and returns it, so call sites can `return fail(...)`.
ms_error_t fail(ms_error_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));
void clear_error();
// Leaves a remark for the caller without an error: the code stays MS_OK.
void note(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Keeps this thread's last error (code and text) across a scope whose failures are not the
// caller's news: clean-up that may fail on its own (an munmap in a destructor) or a runtime's
// callback, while the caller is about to return its own error.
class KeepLastError {
 public:
  KeepLastError();
  ~KeepLastError();
  KeepLastError(const KeepLastError&) = delete;
  KeepLastError& operator=(const KeepLastError&) = delete;

 private:
  ms_error_t code_;
  char text_[512];
};

}  // namespace metaspace

// The C accessors of the last error, defined in common/error.cpp with the state they read, and
// declared for callers in metaspace.h: the library's layers read the last error through them too.
extern "C" {
ms_error_t ms_last_error(void) noexcept;
const char* ms_last_error_text(void) noexcept;
const char* ms_error_name(ms_error_t e) noexcept;
}
