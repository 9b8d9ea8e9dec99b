// The C entry points of the report: argument checks, one snapshot, and the formatter, writing
// to a FILE* or, through a stdio cookie stream, to the caller's callback.
#include <metaspace/metaspace.h>

#include <cstdio>
#include <cstring>

#include "api/exception_barrier.hpp"
#include "api/metaspace_handle.hpp"
#include "api/struct_size.hpp"
#include "common/error.hpp"
#include "instance/metaspace.hpp"
#include "stats/report.hpp"
#include "stats/report_json.hpp"
#include "stats/scale.hpp"

using metaspace::Metaspace;

#undef ms_report_options_init

namespace {

using Formatter = void (*)(FILE*, const metaspace::ReportInput&, const ms_report_options_t&);

ms_error_t report(ms_metaspace_t* handle, FILE* out, const ms_report_options_t* options,
                  Formatter formatter) {
  metaspace::api::MetaspaceCall call(handle);
  Metaspace* ms = call.get();
  if (ms == nullptr) return ms_last_error();
  if (out == nullptr) return metaspace::fail(MS_ERR_INVALID_ARGUMENT, "no output stream");
  ms_report_options_t o = metaspace::default_report_options();
  if (options != nullptr) {
    size_t bytes = 0;
    if (!metaspace::api::caller_struct_bytes("report options", options->size, sizeof o,
                                             metaspace::api::kReportOptionsBytesV0_2, &bytes)) {
      return ms_last_error();
    }
    std::memcpy(&o, options, bytes);
  }
  o.size = sizeof o;
  if (!metaspace::Scale::valid(o.scale)) {
    return metaspace::fail(MS_ERR_INVALID_ARGUMENT,
                           "report scale %#x is none of 0 (dynamic), 'B', 'K', 'M', 'G'",
                           static_cast<unsigned char>(o.scale));
  }
  metaspace::Snapshot snapshot = ms->snapshot();
  const metaspace::ClassSpace& cs = ms->class_space();
  metaspace::ReportInput in{snapshot,      ms->settings(),   cs.base(),
                            cs.bytes(),    cs.shift(),       cs.narrow_bits(),
                            ms->limiter().threshold_bytes()};
  in.archive_path = ms->settings().archive_path;
  in.archive_error = ms->archive_status(&in.archive_reason);
  formatter(out, in, o);
  return MS_OK;
}

struct CallbackSink {
  ms_write_fn write;
  void* user;
};

ssize_t write_to_callback(void* cookie, const char* text, size_t length) {
  auto* sink = static_cast<CallbackSink*>(cookie);
  sink->write(sink->user, text, length);
  return static_cast<ssize_t>(length);
}

// A stdio stream over the callback (glibc's fopencookie), so that both formatters serve both
// kinds of output unchanged. Full buffering: the callback gets pieces of up to 4 KiB.
ms_error_t report_to_callback(ms_metaspace_t* handle, ms_write_fn write, void* user,
                              const ms_report_options_t* options, Formatter formatter) {
  if (write == nullptr) return metaspace::fail(MS_ERR_INVALID_ARGUMENT, "no write callback");
  CallbackSink sink{write, user};
  cookie_io_functions_t io{};
  io.write = write_to_callback;
  FILE* out = fopencookie(&sink, "w", io);
  if (out == nullptr) {
    return metaspace::fail(MS_ERR_OUT_OF_MEMORY, "no stream for the report callback");
  }
  char buffer[4096];
  std::setvbuf(out, buffer, _IOFBF, sizeof buffer);
  ms_error_t e = MS_OK;
  try {
    e = report(handle, out, options, formatter);
  } catch (...) {
    std::fclose(out);
    throw;
  }
  std::fclose(out);
  return e;
}

}  // namespace

extern "C" {

ms_error_t ms_report_options_init_sized(ms_report_options_t* options, size_t size) noexcept {
  return metaspace::api::barrier_error("ms_report_options_init", [&] {
    return metaspace::api::init_sized("report options", options, size,
                                      metaspace::default_report_options(),
                                      metaspace::api::kReportOptionsBytesV0_2);
  });
}

void ms_report_options_init(ms_report_options_t* options) noexcept {
  ms_report_options_init_sized(options, metaspace::api::kReportOptionsBytesV0_2);
}

ms_error_t ms_print_report(ms_metaspace_t* ms, FILE* out,
                           const ms_report_options_t* options) noexcept {
  return metaspace::api::barrier_error(
      "ms_print_report", [&] { return report(ms, out, options, metaspace::print_report); });
}

ms_error_t ms_write_report_json(ms_metaspace_t* ms, FILE* out,
                                const ms_report_options_t* options) noexcept {
  return metaspace::api::barrier_error("ms_write_report_json", [&] {
    return report(ms, out, options, metaspace::write_report_json);
  });
}

ms_error_t ms_print_report_cb(ms_metaspace_t* ms, ms_write_fn write, void* user,
                              const ms_report_options_t* options) noexcept {
  return metaspace::api::barrier_error("ms_print_report_cb", [&] {
    return report_to_callback(ms, write, user, options, metaspace::print_report);
  });
}

ms_error_t ms_write_report_json_cb(ms_metaspace_t* ms, ms_write_fn write, void* user,
                                   const ms_report_options_t* options) noexcept {
  return metaspace::api::barrier_error("ms_write_report_json_cb", [&] {
    return report_to_callback(ms, write, user, options, metaspace::write_report_json);
  });
}

}  // extern "C"
