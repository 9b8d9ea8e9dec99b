#include "api/struct_size.hpp"

#include "common/error.hpp"

namespace metaspace::api {

bool caller_struct_bytes(const char* what, size_t size, size_t ours, size_t first_layout,
                         size_t* bytes) {
  if (size == 0) {
    *bytes = first_layout;
    return true;
  }
  if (size < first_layout) {
    fail(MS_ERR_INVALID_ARGUMENT, "%s size %zu is below the smallest layout (%zu bytes): "
         "initialize the struct with its *_init function", what, size, first_layout);
    return false;
  }
  if (size > ours) {
    fail(MS_ERR_INVALID_ARGUMENT, "%s size %zu: the caller was built against a newer header "
         "than this library (libmetaspace %s, %zu bytes)", what, size, ms_version(), ours);
    return false;
  }
  *bytes = size;
  return true;
}

}  // namespace metaspace::api
