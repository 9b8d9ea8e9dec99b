// ms_settings_t checked and completed: every rule a setting must satisfy is here, and a bad
// value is refused with a sentence naming it before anything is reserved.
#pragma once

#include <metaspace/metaspace.h>

namespace metaspace {

ms_settings_t default_settings();
// Fills in policy-dependent defaults (granule size) and checks everything.
ms_error_t complete_settings(const ms_settings_t& in, ms_settings_t* out);

}  // namespace metaspace
