#include "api/exit_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

#include "chunks/reclaim_policy.hpp"
#include "os/fork_gate.hpp"

namespace metaspace::api {

namespace {

// Metaspaces that want a report, in a list with no destructor (the atexit handler may run after
// static objects are gone). std::mutex is trivially destructible with glibc.
struct Registered {
  ms_metaspace_t* ms;
  int format;
  int verbose;
  Registered* next;
};
std::mutex g_lock;
Registered* g_registered = nullptr;
bool g_atexit_installed = false;

void print(ms_metaspace_t* ms, int format) {
  if (format == MS_REPORT_JSON) {
    ms_write_report_json(ms, stderr, nullptr);
  } else {
    std::fprintf(stderr, "libmetaspace %s: report of metaspace %p\n", ms_version(), (void*)ms);
    ms_print_report(ms, stderr, nullptr);
  }
  std::fflush(stderr);
}

void report_survivors() {
  // At exit, outside any exported call: inside the fork gate like one (it takes library locks).
  os::InsideLibrary inside;
  std::lock_guard<std::mutex> guard(g_lock);
  for (Registered* r = g_registered; r != nullptr; r = r->next) {
    if (r->format != MS_REPORT_NONE) print(r->ms, r->format);
  }
}

// A size as METASPACE_OPTIONS writes it (16k, 4m, 1g; bytes when no suffix divides it), or
// `zero` for 0, which means a default or "no limit" depending on the field.
struct SizeText {
  char text[32];
  SizeText(size_t bytes, const char* zero) {
    static const char kSuffix[] = {'g', 'm', 'k'};
    if (bytes == 0) {
      std::snprintf(text, sizeof text, "%s", zero);
      return;
    }
    for (int i = 0; i < 3; i++) {
      size_t unit = size_t{1} << (10 * (3 - i));
      if (bytes % unit == 0) {
        std::snprintf(text, sizeof text, "%zu%c", bytes / unit, kSuffix[i]);
        return;
      }
    }
    std::snprintf(text, sizeof text, "%zu", bytes);
  }
};

const char* report_name(int format) {
  switch (format) {
    case MS_REPORT_NONE: return "none";
    case MS_REPORT_TEXT: return "text";
    case MS_REPORT_JSON: return "json";
  }
  return "?";
}

}  // namespace

// The settings by the names and units of METASPACE_OPTIONS (settings_options.cpp), not as the
// enum values and byte counts of ms_settings_t.
void on_create(ms_metaspace_t* ms, const ms_settings_t& s) {
  if (s.verbose) {
    std::fprintf(stderr,
                 "libmetaspace %s: metaspace %p created: reclaim=%s granule=%s root_chunk=%s "
                 "node=%s class_space=%s class_alignment=%zu max_committed=%s "
                 "gc_threshold=%s checked=%d count_allocations=%d report_at_exit=%s\n",
                 ms_version(), (void*)ms, reclaim_name(s.reclaim),
                 SizeText(s.commit_granule_bytes, "default").text,
                 SizeText(s.root_chunk_bytes, "default").text, SizeText(s.node_bytes, "default").text,
                 SizeText(s.class_space_bytes, "default").text, s.class_alignment_bytes,
                 SizeText(s.max_committed_bytes, "unlimited").text,
                 SizeText(s.gc_threshold_bytes, "none").text, s.checked, s.count_allocations,
                 report_name(s.report_at_exit));
  }
  if (s.report_at_exit == MS_REPORT_NONE && !s.verbose) return;
  auto* r = new Registered{ms, s.report_at_exit, s.verbose, nullptr};
  std::lock_guard<std::mutex> guard(g_lock);
  if (!g_atexit_installed) g_atexit_installed = std::atexit(report_survivors) == 0;
  r->next = g_registered;
  g_registered = r;
}

void on_destroy(ms_metaspace_t* ms) {
  Registered* found = nullptr;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    for (Registered** link = &g_registered; *link != nullptr; link = &(*link)->next) {
      if ((*link)->ms == ms) {
        found = *link;
        *link = found->next;
        break;
      }
    }
  }
  if (found == nullptr) return;
  if (found->format != MS_REPORT_NONE) print(ms, found->format);
  if (found->verbose) {
    std::fprintf(stderr, "libmetaspace %s: metaspace %p destroyed\n", ms_version(), (void*)ms);
  }
  delete found;
}

}  // namespace metaspace::api
