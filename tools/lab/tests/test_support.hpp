#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "cli.hpp"
#include "trace/trace_player.hpp"
#include "trace/trace_reader.hpp"

namespace lab::test {

// Runs the lab's command line in this process; `out` gets its stdout and stderr.
inline int run_cli_with(std::vector<std::string> args, std::string& out) {
  register_elastic_backends();
  register_malloc_backends();
  args.insert(args.begin(), "metaspace-lab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int status = run_cli(static_cast<int>(argv.size()), argv.data());
  out = testing::internal::GetCapturedStdout();
  out += testing::internal::GetCapturedStderr();
  return status;
}

// Plays the trace `path` through `player`; the TraceError's message, or "" when it played through.
inline std::string play_file(TracePlayer& player, const std::string& path) {
  try {
    TraceReader reader(path);
    TraceEvent e;
    while (reader.next(e)) player.apply(e, reader);
  } catch (const TraceError& e) {
    return e.what();
  }
  return {};
}

}  // namespace lab::test
