// The size rule of the public structs (docs/abi.md): a caller tells the library how many bytes
// of a struct its header has (the leading `size` field of an input struct, or the size the
// ms_get_stats macros pass for an output struct); the library reads or writes only those.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstring>

#include "common/error.hpp"

namespace metaspace::api {

// The sizes of the first layouts that carried a size (0.2): up to the last field 0.2 has,
// padded as the compiler pads the struct. They stay these figures when fields are appended: a
// caller with the 0.2 layout gets defaults for the newer fields. A size field of 0 stands for
// these (zero-initialized structs).
constexpr size_t layout_bytes(size_t end_of_last_field, size_t alignment) {
  return (end_of_last_field + alignment - 1) / alignment * alignment;
}
inline constexpr size_t kSettingsBytesV0_2 =
    layout_bytes(offsetof(ms_settings_t, verbose) + sizeof(int), alignof(ms_settings_t));
inline constexpr size_t kReportOptionsBytesV0_2 = layout_bytes(
    offsetof(ms_report_options_t, free_lists) + sizeof(int), alignof(ms_report_options_t));
inline constexpr size_t kStatsBytesV0_2 =
    layout_bytes(offsetof(ms_stats_t, uncommits) + sizeof(size_t), alignof(ms_stats_t));
inline constexpr size_t kLoaderStatsBytesV0_2 = layout_bytes(
    offsetof(ms_loader_stats_t, chunks_by_level) + sizeof(size_t) * 2 * MS_MAX_CHUNK_LEVELS,
    alignof(ms_loader_stats_t));

// The bytes to copy for a caller that says `size`, or false with MS_ERR_INVALID_ARGUMENT: a
// size below the first layout is garbage (the init function was not called), a size above
// ours comes from a newer header than this library.
bool caller_struct_bytes(const char* what, size_t size, size_t ours, size_t first_layout,
                         size_t* bytes);

// The body of the *_init_sized functions: `defaults`, with its size field, written over the
// caller's first `size` bytes.
template <class T>
ms_error_t init_sized(const char* what, T* out, size_t size, T defaults, size_t first_layout) {
  if (out == nullptr) return MS_OK;  // documented no-op
  if (size == 0) return fail(MS_ERR_INVALID_ARGUMENT, "%s size 0", what);
  size_t bytes = 0;
  if (!caller_struct_bytes(what, size, sizeof(T), first_layout, &bytes)) return ms_last_error();
  defaults.size = bytes;
  std::memcpy(out, &defaults, bytes);
  return MS_OK;
}

}  // namespace metaspace::api
