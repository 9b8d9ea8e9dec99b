#include "api/exit_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>

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

}  // namespace

void on_create(ms_metaspace_t* ms, const ms_settings_t& s) {
  if (s.verbose) {
    static const char* const kReclaim[] = {"none", "balanced", "aggressive"};
    std::fprintf(stderr,
                 "libmetaspace %s: metaspace %p created: reclaim=%s granule=%zu root_chunk=%zu "
                 "node=%zu class_space=%zu class_alignment=%zu max_committed=%zu "
                 "gc_threshold=%zu checked=%d count_allocations=%d report_at_exit=%d\n",
                 ms_version(), (void*)ms, kReclaim[s.reclaim], s.commit_granule_bytes,
                 s.root_chunk_bytes, s.node_bytes, s.class_space_bytes, s.class_alignment_bytes,
                 s.max_committed_bytes, s.gc_threshold_bytes, s.checked, s.count_allocations,
                 s.report_at_exit);
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
