// The calling thread's last error: every failing call records a code and a sentence, so a runtime
// can report *why* an allocation failed without the library ever printing or aborting.
#pragma once

#include <metaspace/metaspace.h>

namespace metaspace {

// Records the error for this thread and returns it, so call sites can `return fail(...)`.
ms_error_t fail(ms_error_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));
void clear_error();
// Leaves a remark for the caller without an error: the code stays MS_OK.
void note(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace metaspace
