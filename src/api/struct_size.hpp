// The size rule of the public structs (docs/abi.md): a caller tells the library how many bytes
// of a struct its header has (the leading `size` field of an input struct, or the size the
// ms_get_stats macros pass for an output struct); the library reads or writes only those.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

namespace metaspace::api {

// The sizes of the first layouts that carried a size (0.2). A size field of 0 stands for these
// (zero-initialized structs); when a struct grows, its constant here stays the 0.2 figure.
inline constexpr size_t kSettingsBytesV0_2 = sizeof(ms_settings_t);
inline constexpr size_t kReportOptionsBytesV0_2 = sizeof(ms_report_options_t);
inline constexpr size_t kStatsBytesV0_2 = sizeof(ms_stats_t);
inline constexpr size_t kLoaderStatsBytesV0_2 = sizeof(ms_loader_stats_t);

// The bytes to copy for a caller that says `size`, or false with MS_ERR_INVALID_ARGUMENT: a
// size below the first layout is garbage (the init function was not called), a size above
// ours comes from a newer header than this library.
bool caller_struct_bytes(const char* what, size_t size, size_t ours, size_t first_layout,
                         size_t* bytes);

}  // namespace metaspace::api
