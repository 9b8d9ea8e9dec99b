// The C entry points of the report: argument checks, one snapshot, and the formatter.
#include <metaspace/metaspace.h>

#include "common/error.hpp"
#include "instance/metaspace.hpp"
#include "stats/report.hpp"
#include "stats/report_json.hpp"
#include "stats/scale.hpp"

using metaspace::Metaspace;

namespace {

using Formatter = void (*)(FILE*, const metaspace::ReportInput&, const ms_report_options_t&);

ms_error_t report(ms_metaspace_t* handle, FILE* out, const ms_report_options_t* options,
                  Formatter formatter) {
  if (handle == nullptr || out == nullptr) {
    return metaspace::fail(MS_ERR_INVALID_ARGUMENT, "no metaspace or no output stream");
  }
  ms_report_options_t o = options != nullptr ? *options : metaspace::default_report_options();
  if (!metaspace::Scale::valid(o.scale)) {
    return metaspace::fail(MS_ERR_INVALID_ARGUMENT,
                           "report scale %#x is none of 0 (dynamic), 'B', 'K', 'M', 'G'",
                           static_cast<unsigned char>(o.scale));
  }
  Metaspace* ms = reinterpret_cast<Metaspace*>(handle);
  metaspace::Snapshot snapshot = ms->snapshot();
  const metaspace::ClassSpace& cs = ms->class_space();
  metaspace::ReportInput in{snapshot,      ms->settings(),   cs.base(),
                            cs.bytes(),    cs.shift(),       cs.narrow_bits(),
                            ms->limiter().threshold_bytes()};
  formatter(out, in, o);
  return MS_OK;
}

}  // namespace

extern "C" {

ms_error_t ms_print_report(ms_metaspace_t* ms, FILE* out, const ms_report_options_t* options) {
  return report(ms, out, options, metaspace::print_report);
}

ms_error_t ms_write_report_json(ms_metaspace_t* ms, FILE* out,
                                const ms_report_options_t* options) {
  return report(ms, out, options, metaspace::write_report_json);
}

}  // extern "C"
