// ms_settings_t checked and completed: every rule a setting must satisfy is here, and a bad
// value is refused with a sentence naming it before anything is reserved.
#pragma once

#include <metaspace/types.h>

namespace metaspace {

ms_settings_t default_settings();
// Fills in policy-dependent defaults (granule size) and checks everything.
ms_error_t complete_settings(const ms_settings_t& in, ms_settings_t* out);

// Address space of each of a metaspace's two bookkeeping ranges (the structures of both spaces:
// chunk headers, arenas, free-block structures; and the loader objects): an eighth of the class
// space plus half a non-class node, rounded up to a MiB, at least 32 MiB, at most 4 GiB. 160 MiB
// each with the defaults (room for over a million loader objects), 40 MiB with a 64 MiB class
// space. docs/design.md, "Address space", adds up what a metaspace reserves.
size_t bookkeeping_range_bytes(const ms_settings_t& s);
inline constexpr size_t kMinBookkeepingRangeBytes = size_t{32} << 20;
// Names for the reservation errors: the range and the settings that size it.
inline constexpr const char* kStructuresRangeName =
    "the bookkeeping range of the spaces' structures (class_space_bytes / 8 + node_bytes / 2)";
inline constexpr const char* kLoaderObjectsRangeName =
    "the bookkeeping range of the loader objects (class_space_bytes / 8 + node_bytes / 2)";

}  // namespace metaspace
