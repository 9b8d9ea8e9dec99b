#include "common/error.hpp"
#include "common/verify.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace metaspace {

namespace {
thread_local ms_error_t t_last_error = MS_OK;
thread_local char t_last_text[512] = "no error";
}  // namespace

ms_error_t fail(ms_error_t code, const char* format, ...) {
  t_last_error = code;
  int prefix = std::snprintf(t_last_text, sizeof t_last_text, "%s: ", ms_error_name(code));
  va_list args;
  va_start(args, format);
  std::vsnprintf(t_last_text + prefix, sizeof t_last_text - prefix, format, args);
  va_end(args);
  return code;
}

void append_error(const char* format, ...) {
  size_t used = std::strlen(t_last_text);
  va_list args;
  va_start(args, format);
  std::vsnprintf(t_last_text + used, sizeof t_last_text - used, format, args);
  va_end(args);
}

void note(const char* format, ...) {
  t_last_error = MS_OK;
  va_list args;
  va_start(args, format);
  std::vsnprintf(t_last_text, sizeof t_last_text, format, args);
  va_end(args);
}

KeepLastError::KeepLastError() : code_(t_last_error) {
  static_assert(sizeof text_ == sizeof t_last_text, "the whole text is kept");
  std::memcpy(text_, t_last_text, sizeof text_);
}

KeepLastError::~KeepLastError() {
  t_last_error = code_;
  std::memcpy(t_last_text, text_, sizeof text_);
}

void clear_error() {
  t_last_error = MS_OK;
  std::snprintf(t_last_text, sizeof t_last_text, "no error");
}

}  // namespace metaspace

extern "C" {

ms_error_t ms_last_error(void) noexcept { return metaspace::t_last_error; }
const char* ms_last_error_text(void) noexcept { return metaspace::t_last_text; }

const char* ms_error_name(ms_error_t e) noexcept {
  switch (e) {
    case MS_OK: return "ok";
    case MS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MS_ERR_TOO_LARGE: return "too large";
    case MS_ERR_LIMIT: return "metaspace limit reached";
    case MS_ERR_CLASS_SPACE_FULL: return "class space full";
    case MS_ERR_COMMIT_FAILED: return "commit failed";
    case MS_ERR_RESERVE_FAILED: return "reserve failed";
    case MS_ERR_NOT_OWNED: return "not owned";
    case MS_ERR_DOUBLE_FREE: return "double free";
    case MS_ERR_OVERWRITE: return "overwrite detected";
    case MS_ERR_DESTROYED: return "loader destroyed";
    case MS_ERR_CORRUPTED: return "corrupted";
    case MS_ERR_OUT_OF_MEMORY: return "out of memory";
    case MS_ERR_ARCHIVE_IO: return "archive I/O error";
    case MS_ERR_ARCHIVE_FORMAT: return "not a valid archive";
    case MS_ERR_ARCHIVE_VERSION: return "archive version mismatch";
    case MS_ERR_ARCHIVE_MISMATCH: return "archive settings mismatch";
    case MS_ERR_ARCHIVE_CHECKSUM: return "archive checksum mismatch";
    case MS_ERR_ARCHIVE_CHANGED: return "archive changed while mapped";
  }
  return "unknown error";
}

}  // extern "C"
