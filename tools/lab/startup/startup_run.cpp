#include "startup/startup_run.hpp"

#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "archive_workload.hpp"
#include "proc_memory.hpp"
#include "two_processes.hpp"

namespace lab {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

ms_settings_t startup_settings(const StartupParams& params) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = params.class_alignment;
  return s;
}

}  // namespace

const char* startup_mode_name(StartupMode mode) {
  switch (mode) {
    case StartupMode::build: return "build";
    case StartupMode::map: return "map";
    case StartupMode::relocate: return "relocate";
    case StartupMode::relocate_eager: return "relocate-eager";
  }
  return "?";
}

bool parse_startup_mode(const std::string& name, StartupMode& mode) {
  for (StartupMode m : {StartupMode::build, StartupMode::map, StartupMode::relocate, StartupMode::relocate_eager}) {
    if (name == startup_mode_name(m)) {
      mode = m;
      return true;
    }
  }
  return false;
}

nlohmann::json StartupSample::to_json() const {
  nlohmann::json j = {{"mode", startup_mode_name(mode)}, {"threads", threads},
                      {"create_ms", create_ms},          {"ready_ms", ready_ms},
                      {"committed", committed},          {"rss", rss},
                      {"pss", pss},                      {"archive_mapped", archive_mapped},
                      {"relocated", relocated},          {"relocation_delta", relocation_delta},
                      {"archive_relocation", archive_relocation}};
  if (!error.empty()) j["error"] = error;
  return j;
}

StartupSample StartupSample::from_json(const nlohmann::json& j) {
  StartupSample s;
  if (!parse_startup_mode(j.at("mode").get<std::string>(), s.mode)) throw std::runtime_error("bad startup mode");
  s.threads = j.at("threads").get<unsigned>();
  s.create_ms = j.at("create_ms").get<double>();
  s.ready_ms = j.at("ready_ms").get<double>();
  s.committed = j.at("committed").get<std::size_t>();
  s.rss = j.at("rss").get<std::size_t>();
  s.pss = j.at("pss").get<std::size_t>();
  s.archive_mapped = j.at("archive_mapped").get<bool>();
  s.relocated = j.at("relocated").get<bool>();
  s.relocation_delta = j.at("relocation_delta").get<std::int64_t>();
  s.archive_relocation = j.value("archive_relocation", "");
  s.error = j.value("error", "");
  return s;
}

std::string dump_startup_archive(const StartupParams& params, const std::string& path) {
  const auto shape = archive_workload::make_shape(params.classes);
  if (archive_workload::dump(shape, params.classes, startup_settings(params), params.base, path.c_str()) != MS_OK)
    return ms_last_error_text();
  return {};
}

StartupSample run_startup(StartupMode mode, unsigned threads, const StartupParams& params, const std::string& archive) {
  StartupSample r;
  r.mode = mode;
  r.threads = threads;
  // The workload is drawn before the clock starts: a runtime reads class files, it does not draw them.
  const auto shape = archive_workload::make_shape(params.classes + params.loaded_after);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  // Something else holds the archive's base, as an address space layout of the runtime or a
  // library loaded first would: the archive must go elsewhere.
  void* squat = nullptr;
  constexpr std::size_t kSquatBytes = 1 << 20;
  const bool relocate = mode == StartupMode::relocate || mode == StartupMode::relocate_eager;
  if (relocate) {
    squat = mmap(reinterpret_cast<void*>(params.base), kSquatBytes, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (squat == MAP_FAILED) squat = nullptr;
  }
  const std::size_t rss0 = proc_memory::resident_bytes();
  const std::size_t pss0 = proc_memory::proportional_bytes().value_or(0);

  ms_settings_t s = startup_settings(params);
  if (mode != StartupMode::build) {
    s.archive_path = archive.c_str();
    s.archive_policy = MS_ARCHIVE_REQUIRE;
    s.archive_verify = 0;  // lazy: the regions are read when used
    s.archive_relocation = mode == StartupMode::relocate_eager ? MS_ARCHIVE_RELOCATE_EAGER : MS_ARCHIVE_RELOCATE_AUTO;
  }
  const auto t0 = Clock::now();
  ms_metaspace_t* ms = ms_create(&s);
  if (ms == nullptr) {
    r.error = ms_last_error_text();
    if (squat != nullptr) munmap(squat, kSquatBytes);
    return r;
  }
  if (mode == StartupMode::build)
    archive_workload::build(ms, ms_loader_create(ms, MS_LOADER_BOOT, 0), shape, 0, params.classes);
  r.create_ms = ms_since(t0);
  // The rest: the application's classes, loaded by `threads` threads into the one app loader
  // (a JVM's application class loader is shared by all its threads).
  ms_loader_t* app = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  for (unsigned t = 0; t < threads; t++) {
    const std::size_t from = params.classes + params.loaded_after * t / threads;
    const std::size_t to = params.classes + params.loaded_after * (t + 1) / threads;
    workers.emplace_back([&, from, to] { archive_workload::build(ms, app, shape, from, to); });
  }
  for (auto& w : workers) w.join();
  r.ready_ms = ms_since(t0);

  r.rss = proc_memory::resident_bytes() - std::min(rss0, proc_memory::resident_bytes());
  const std::size_t pss1 = proc_memory::proportional_bytes().value_or(0);
  r.pss = pss1 > pss0 ? pss1 - pss0 : 0;
  ms_stats_t stats;
  ms_get_stats(ms, &stats);
  r.committed = stats.total.committed_bytes;
  r.archive_mapped = stats.archive.mapped != 0;
  r.relocated = stats.archive.relocated != 0;
  r.relocation_delta = static_cast<std::int64_t>(stats.archive.relocation_delta);
  if (r.relocated) {
    r.archive_relocation = stats.archive.relocation == MS_ARCHIVE_RELOCATE_LAZY ? "lazy" : "eager";
    if (stats.archive.relocation_reason != nullptr && stats.archive.relocation == MS_ARCHIVE_RELOCATE_EAGER)
      r.archive_relocation += std::string(" (") + stats.archive.relocation_reason + ")";
  }
  ms_destroy(ms);
  if (squat != nullptr) munmap(squat, kSquatBytes);
  return r;
}

nlohmann::json SharedStartup::to_json() const {
  nlohmann::json j = {{"mode", startup_mode_name(mode)},
                      {"rss", {rss[0], rss[1]}},
                      {"pss", {pss[0], pss[1]}}};
  if (!error.empty()) j["error"] = error;
  return j;
}

SharedStartup run_two_startups(StartupMode mode, const StartupParams& params, const std::string& archive) {
  SharedStartup r;
  r.mode = mode;
  const auto shape = archive_workload::make_shape(params.classes);
  auto gains = two_processes::measure([&]() -> std::function<void()> {
    ms_settings_t s = startup_settings(params);
    if (mode != StartupMode::build) {
      s.archive_path = archive.c_str();
      s.archive_policy = MS_ARCHIVE_REQUIRE;
    }
    ms_metaspace_t* ms = ms_create(&s);
    if (ms == nullptr) _exit(1);
    if (mode != StartupMode::build) {
      // ms_create checks the file with pread, not through the mapping: the archive's pages join
      // the process's RSS (shared with the other process) when the runtime uses its classes. A
      // read of every page stands for that use.
      ms_stats_t st;
      if (ms_get_stats(ms, &st) != MS_OK || !st.archive.mapped) _exit(1);
      const volatile char* p = reinterpret_cast<const volatile char*>(st.archive.base);
      for (std::size_t off = 0; off < st.archive.file_bytes; off += 4096) (void)p[off];
    }
    if (mode == StartupMode::build)
      archive_workload::build(ms, ms_loader_create(ms, MS_LOADER_BOOT, 0), shape, 0, params.classes);
    return [ms] { ms_destroy(ms); };
  });
  if (!gains) {
    r.error = "a child process failed";
    return r;
  }
  r.rss[0] = gains->first.rss_bytes;
  r.rss[1] = gains->second.rss_bytes;
  r.pss[0] = gains->first.pss_bytes;
  r.pss[1] = gains->second.pss_bytes;
  return r;
}

}  // namespace lab
