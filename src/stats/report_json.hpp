// The report's data as JSON, schema "libmetaspace.report" version 2 (docs/report-schema.md).
// All sizes are bytes; the scale option does not apply. Bump the version on any change that
// removes or renames a field or changes its meaning; adding fields keeps it.
#pragma once

#include <metaspace/types.h>

#include <cstdio>

#include "stats/report.hpp"

namespace metaspace {

constexpr const char* kReportSchema = "libmetaspace.report";
constexpr unsigned kReportSchemaVersion = 2;

void write_report_json(FILE* out, const ReportInput& in, const ms_report_options_t& options);

}  // namespace metaspace
