#include <gtest/gtest.h>

#include <fstream>

#include <string>

#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "cli.hpp"
#include "runner.hpp"
#include "scenarios/replay.hpp"
#include "test_support.hpp"

namespace lab {
namespace {

std::string data(const std::string& name) { return std::string(LAB_TEST_DATA_DIR) + "/" + name; }

// The live bytes at the end of each fixture by the trace's own accounting (allocated, not freed,
// loader alive), as the import printed it; the replay's must agree and the library's used with it.
struct Fixture {
  const char* trace;
  std::size_t live_at_end;
  std::size_t hotspot_points;  // markers with HotSpot's figures: one per GC and peak, and the exit
};
constexpr Fixture kFixtures[] = {
    {"jdk25-version.trace.gz", 3987600, 1},
    {"jdk25-javac-hello.trace.gz", 18337640, 7},
    {"jdk25-unload.trace.gz", 6591568, 5},
    {"jdk25-coh-unload.trace.gz", 6604032, 5},
    {"jdk25-interleave.trace.gz", 6751296, 11},
    // Recorded with `peak` markers (HotSpot's committed peaks between GCs): 8 GCs, 6 peaks, exit.
    {"jdk25-many-loaders.trace.gz", 7318648, 15},
    {"jdk25-javac-sample.trace.gz", 11049648, 8},
    {"jdk25-jshell.trace.gz", 16092648, 14},
    {"jdk25-unload-cds.trace.gz", 362688, 7},
    {"jdk25-ml-10-20-60.trace.gz", 7345600, 22},
    // JDK 17 (its log dialect): 4 GCs, a peak, an unload marker and the exit.
    {"jdk17-classchurn.trace.gz", 25138688, 7},
};

BackendRun replay(const std::string& trace, const std::string& backend) {
  register_elastic_backends();
  register_malloc_backends();
  ReplayScenario scenario;
  scenario.trace = trace;
  scenario.sample_every = 10000;
  return run_in_process(scenario, backend, WorkloadParams{}, BackendOptions{}, false);
}

TEST(TraceReplay, LibraryUsedMatchesTheTracesAccountingAtTheEnd) {
  for (const auto& f : kFixtures) {
    for (const std::string backend : {"elastic", "no-reclaim"}) {
      const BackendRun run = replay(data(f.trace), backend);
      ASSERT_TRUE(run.error.empty()) << f.trace << " " << backend << ": " << run.error;
      ASSERT_FALSE(run.samples.empty());
      const Sample& end = run.samples.back();
      EXPECT_EQ(end.phase, "end");
      EXPECT_EQ(end.live, f.live_at_end) << f.trace << " " << backend;
      EXPECT_EQ(end.used, end.live) << f.trace << " " << backend;
      EXPECT_EQ(end.extra["skipped_frees"], 0) << f.trace << " " << backend;
      for (const auto& s : run.samples) EXPECT_EQ(s.used, s.live) << f.trace << " " << backend << " " << s.phase << " " << s.step;
    }
  }
}

TEST(TraceReplay, HotSpotsOwnFiguresBecomeASeriesBesideTheBackends) {
  for (const auto& f : kFixtures) {
    RunResult result;
    result.backends.push_back(replay(data(f.trace), "malloc"));
    ASSERT_TRUE(result.backends[0].error.empty()) << result.backends[0].error;
    const ReferenceSeries hotspot = hotspot_series(result);
    EXPECT_EQ(hotspot.name, "hotspot");
    ASSERT_EQ(hotspot.samples.size(), f.hotspot_points) << f.trace;
    const Sample& exit = hotspot.samples.back();
    EXPECT_EQ(exit.phase, "exit");
    EXPECT_EQ(exit.live, f.live_at_end);
    EXPECT_GE(exit.committed, exit.used);
    EXPECT_GE(exit.used, exit.live);  // HotSpot's used holds its free-block lists too
  }
}

TEST(TraceReplay, SamplesAtUnloadingMarkersAndEveryNEvents) {
  const BackendRun run = replay(data("jdk25-unload.trace.gz"), "malloc");
  ASSERT_TRUE(run.error.empty()) << run.error;
  int unloads = 0, gcs = 0, every = 0;
  for (const auto& s : run.samples) {
    unloads += s.phase == "unload";
    gcs += s.phase == "gc";
    every += s.phase == "events";
  }
  EXPECT_EQ(unloads, 4);  // the 60 deaths come in 4 GCs
  EXPECT_EQ(gcs, 4);
  EXPECT_EQ(every, 50633 / 10000);
}

using test::run_cli_with;

TEST(TraceCli, ImportThenReplayShowsTheHotSpotColumn) {
  const std::string trace = testing::TempDir() + "trace_cli_version.trace.gz";
  std::string out;
  ASSERT_EQ(run_cli_with({"import-hotspot", data("jdk25-version.log.gz"), "-o", trace}, out), 0) << out;
  EXPECT_NE(out.find("\"allocations\": 29101"), std::string::npos) << out;
  ASSERT_EQ(run_cli_with({"replay", trace, "--backends", "elastic,no-reclaim", "--no-files", "--quiet"}, out), 0) << out;
  EXPECT_NE(out.find("hotspot"), std::string::npos) << out;
  EXPECT_NE(out.find("exit 1"), std::string::npos) << out;
  EXPECT_NE(out.find("M events/s"), std::string::npos) << out;

  EXPECT_EQ(run_cli_with({"import-hotspot", data("README.md"), "-o", trace}, out), 1);
  EXPECT_NE(out.find("no 'CLMS @.. : born' line"), std::string::npos) << out;
  // Bad input is found before any backend runs, and said once.
  EXPECT_EQ(run_cli_with({"replay", data("README.md"), "--backends", "elastic,malloc", "--no-files", "--quiet"}, out),
            2);
  EXPECT_EQ(out.find("not a metaspace trace"), out.rfind("not a metaspace trace")) << out;
  EXPECT_NE(out.find("not a metaspace trace"), std::string::npos) << out;
}

TEST(TraceCli, AnImpossibleSequenceIsReportedOnceBeforeAnyBackendRuns) {
  // Every record reads well alone; line 4 frees for a loader that died on line 3.
  const std::string trace = testing::TempDir() + "trace_cli_dead.trace";
  std::ofstream(trace) << "metaspace-trace 1\nB 0 standard\nD 0\nF 0 0\nE 3\n";
  std::string out;
  EXPECT_EQ(run_cli_with({"replay", trace, "--backends", "elastic,malloc", "--no-files", "--quiet"}, out), 2);
  const std::string message = "trace_cli_dead.trace:4: a free for loader 0, which already died";
  EXPECT_NE(out.find(message), std::string::npos) << out;
  EXPECT_EQ(out.find(message), out.rfind(message)) << out;
  EXPECT_EQ(out.find("elastic"), std::string::npos) << "no backend ran: " << out;
}

}  // namespace
}  // namespace lab
