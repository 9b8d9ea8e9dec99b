#include "compare/compare_driver.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "backend_registry.hpp"
#include "compare/child_protocol.hpp"
#include "compare/subprocess.hpp"
#include "file_locator.hpp"

namespace lab {

std::vector<BackendRun> compare_in_children(const std::string& scenario, const std::vector<std::string>& backends,
                                            const std::vector<std::string>& forwarded_args, bool quiet,
                                            std::vector<std::string>& notes, const std::string& label) {
  const std::string what = label.empty() || label == scenario ? scenario : scenario + " " + label;
  std::vector<BackendRun> runs;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const auto& name = backends[i];
    const auto entry = find_backend_entry(name);
    const auto exe = executable_dir() / entry->executable;
    if (!std::filesystem::exists(exe)) {
      notes.push_back(fmt::format("{}: skipped, {} is not in {} (not built: its allocator's development package was "
                                  "not found when configuring; or not copied or installed beside metaspace-lab)",
                                  name, entry->executable, executable_dir().string()));
      continue;
    }
    std::vector<std::string> argv = {exe.string(), scenario, "--backends", name, "--emit-jsonl"};
    if (quiet) argv.push_back("--quiet");
    argv.insert(argv.end(), forwarded_args.begin(), forwarded_args.end());


    const auto start = std::chrono::steady_clock::now();
    ChildStreamParser parser;
    const int status = run_process(argv, [&](const std::string& line) { parser.feed(line); });
    auto child_runs = parser.finish(status);
    if (child_runs.empty()) {
      BackendRun failed;
      failed.name = name;
      failed.executable = entry->executable;
      failed.error = fmt::format("{} produced no results (exit status {})", entry->executable, status);
      child_runs.push_back(std::move(failed));
    }
    if (!quiet) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      // One whole line per backend when its process ends (the figures of earlier traces are drawn
      // meanwhile by a process that writes lines of its own).
      std::fprintf(stderr, "[%zu/%zu] %s: %s (%s) %.1f s%s\n", i + 1, backends.size(), what.c_str(), name.c_str(),
                   entry->executable.c_str(), s, child_runs.back().error.empty() ? "" : " FAILED");
    }
    for (auto& r : child_runs) runs.push_back(std::move(r));
  }
  return runs;
}

}  // namespace lab
