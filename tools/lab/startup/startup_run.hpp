#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace lab {

// How a start-up gets its first `classes` classes' metadata.
enum class StartupMode {
  build,     // no archive: allocate and write every block (one boot loader, one thread)
  map,       // the archive mapped at the base it was written for
  relocate,  // that base taken (this process maps something there first): mapped elsewhere, its
             // pointers moved as archive_relocation=auto chooses (lazily: archive_verify is 0)
  relocate_eager,  // the same with archive_relocation=eager: every pointer moved in ms_create
};

const char* startup_mode_name(StartupMode mode);
bool parse_startup_mode(const std::string& name, StartupMode& mode);

// What one start-up is asked to do; the same for the parent (which dumps) and each child.
struct StartupParams {
  std::size_t classes = 40000;      // in the archive (or built, without it)
  std::size_t loaded_after = 4000;  // loaded after start-up by `threads` threads into the app loader
  std::size_t class_alignment = 64;
  std::uintptr_t base = 0x800000000;  // the archive's requested base (HotSpot's default, 32 GiB)
};

// One start-up, measured in this process (a fresh one: the lab runs each in a child).
struct StartupSample {
  StartupMode mode = StartupMode::build;
  unsigned threads = 1;
  double create_ms = 0;     // ms_create, plus building the `classes` without an archive
  double ready_ms = 0;      // ... plus `loaded_after` classes loaded by the threads
  std::size_t committed = 0;  // the library's committed bytes, both spaces (the archive is not committed)
  std::size_t rss = 0;        // resident bytes gained since before ms_create (/proc/self/statm)
  std::size_t pss = 0;        // proportional bytes gained (/proc/self/smaps_rollup)
  bool archive_mapped = false;
  bool relocated = false;
  std::int64_t relocation_delta = 0;
  std::string archive_relocation;  // how a relocated archive was moved (eager/lazy), as reported
  std::string error;

  nlohmann::json to_json() const;
  static StartupSample from_json(const nlohmann::json& j);
};

// Runs one start-up: `archive` is the file dumped by dump_startup_archive (unused for build).
StartupSample run_startup(StartupMode mode, unsigned threads, const StartupParams& params, const std::string& archive);

// Two processes holding the archive (every page read) or the built metadata at once: what each
// gained. The archive's pages are shared, so each one's PSS is about half its RSS.
struct SharedStartup {
  StartupMode mode = StartupMode::map;  // map or build
  std::size_t rss[2] = {};
  std::size_t pss[2] = {};
  std::string error;

  nlohmann::json to_json() const;
};
SharedStartup run_two_startups(StartupMode mode, const StartupParams& params, const std::string& archive);

// Dumps the first params.classes classes of the workload into `path`; "" or the error's text.
std::string dump_startup_archive(const StartupParams& params, const std::string& path);

}  // namespace lab
