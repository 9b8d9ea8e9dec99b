// What ms_settings_t.verbose and .report_at_exit ask for: a line on stderr when a metaspace is
// created and destroyed, and its report on stderr when it is destroyed or, if it is still alive
// then, when the process exits.
#pragma once

#include <metaspace/metaspace.h>

namespace metaspace::api {

void on_create(ms_metaspace_t* ms, const ms_settings_t& settings);
// Before the metaspace is destroyed.
void on_destroy(ms_metaspace_t* ms);

}  // namespace metaspace::api
