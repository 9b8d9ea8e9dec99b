// Every scenario at a tiny size, on the library and on malloc: the samples a run must produce and
// the invariants they must satisfy.
#include <gtest/gtest.h>

#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "runner.hpp"
#include "machine_load.hpp"
#include "scenarios/interleaved.hpp"
#include "scenarios/micro.hpp"
#include "scenarios/one_loader.hpp"
#include "scenarios/spikes.hpp"
#include "scenarios/threads.hpp"

namespace lab {
namespace {

class Scenarios : public ::testing::Test {
 protected:
  void SetUp() override {
    register_elastic_backends();
    register_malloc_backends();
  }
  BackendRun run(const Scenario& s, const std::string& backend, BackendOptions options = {}) {
    WorkloadParams w;
    w.dealloc_fraction = 0.01;  // enough premature frees to matter at this size
    auto r = run_in_process(s, backend, w, options, false);
    EXPECT_EQ(r.error, "") << backend;
    return r;
  }
};

InterleavedScenario tiny_interleaved(bool spike) {
  InterleavedScenario s;
  s.loaders = 10;
  s.classes_per_loader = 60;
  s.spike = spike;
  return s;
}

const Sample& at(const BackendRun& r, const std::string& phase, int step) {
  for (const auto& s : r.samples)
    if (s.phase == phase && s.step == step) return s;
  throw std::runtime_error("no sample " + phase + " " + std::to_string(step));
}

TEST_F(Scenarios, InterleavedSamplesEveryStepAndAccountsLiveBytesExactly) {
  auto s = tiny_interleaved(true);
  BackendRun r = run(s, "malloc");
  ASSERT_EQ(r.samples.size(), 1u + 5 + 5 + 5 + 5);
  EXPECT_EQ(r.samples.front().phase, "start");
  EXPECT_EQ(r.samples.back().phase, "unload2");
  for (const auto& x : r.samples) {
    // malloc's used is the backend's own count of requested bytes: it must equal the lab's.
    EXPECT_EQ(x.live, x.used) << x.phase << " " << x.step;
    EXPECT_GT(x.rss, 0u);
    EXPECT_GT(x.mappings, 0u);
  }
  EXPECT_EQ(at(r, "load", 5).extra["classes"], 600);
  EXPECT_EQ(at(r, "unload", 4).extra["loaders"], 2);
  EXPECT_EQ(at(r, "unload", 5).live, 0u);
  EXPECT_EQ(at(r, "reload", 5).extra["loaders"], 10);
  EXPECT_EQ(at(r, "unload2", 5).live, 0u);
  // Loading grows live monotonically; each release step shrinks it.
  for (int i = 2; i <= 5; ++i) {
    EXPECT_GT(at(r, "load", i).live, at(r, "load", i - 1).live);
    EXPECT_LT(at(r, "unload", i).live, at(r, "unload", i - 1).live);
  }
}

TEST_F(Scenarios, InterleavedIsDeterministicForASeed) {
  auto s = tiny_interleaved(false);
  BackendRun a = run(s, "malloc"), b = run(s, "malloc");
  ASSERT_EQ(a.samples.size(), b.samples.size());
  for (std::size_t i = 0; i < a.samples.size(); ++i) EXPECT_EQ(a.samples[i].live, b.samples[i].live);
}

TEST_F(Scenarios, LibraryBackendsNeverReportMoreUsedThanCommitted) {
  auto s = tiny_interleaved(true);
  for (const char* backend : {"elastic", "no-reclaim", "elastic-16k"}) {
    BackendRun r = run(s, backend);
    ASSERT_EQ(r.samples.size(), 21u) << backend;
    for (const auto& x : r.samples) {
      EXPECT_LE(x.used, x.committed) << backend << " " << x.phase << " " << x.step;
      EXPECT_LE(x.live, x.used) << backend << " " << x.phase << " " << x.step;  // used is rounded up, never less
    }
  }
}

TEST_F(Scenarios, ElasticGivesBackWhatLegacyKeepsAfterUnloading) {
  InterleavedScenario s;
  s.loaders = 20;
  s.classes_per_loader = 300;
  BackendRun elastic = run(s, "elastic"), no_reclaim = run(s, "no-reclaim");
  const auto& e = at(elastic, "unload", 4);
  const auto& l = at(no_reclaim, "unload", 4);
  EXPECT_EQ(e.live, l.live);
  EXPECT_LT(e.committed * 3, l.committed * 2) << "elastic " << e.committed << " no-reclaim " << l.committed;
  EXPECT_LE(at(elastic, "unload", 5).committed, at(elastic, "load", 5).committed / 10);
}

TEST_F(Scenarios, SpikesHasTwoSpikesAndAValley) {
  SpikesScenario s;
  s.batches = 3;
  s.loaders_per_batch = 2;
  s.classes_per_loader = 50;
  BackendRun r = run(s, "elastic");
  // The sampled round, then one `repeat` sample per further round (default 3 rounds in all).
  ASSERT_EQ(r.samples.size(), 1u + 3 + 2 + 3 + 4 + 2);
  EXPECT_GT(at(r, "unload1", 2).live, 0u);  // one batch survives the valley
  EXPECT_EQ(at(r, "unload2", 4).live, 0u);
  std::uint64_t sampled_ns = 0;
  for (const auto& x : r.samples)
    if (x.phase != "repeat") sampled_ns += x.elapsed_ns;
  for (int round : {1, 2}) {
    EXPECT_EQ(at(r, "repeat", round).live, 0u);
    EXPECT_GT(at(r, "repeat", round).elapsed_ns, 0u);
  }

  // The timing verdict is the best of the rounds and says the load it was taken at.
  RunResult result;
  result.backends.push_back(r);
  BackendRun m = run(s, "malloc");
  result.backends.push_back(m);
  const auto lines = s.verdict(result);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("(best of 3)"), std::string::npos) << lines[0];
  EXPECT_TRUE(lines[0].find("elastic time <= malloc's: met") != std::string::npos ||
              lines[0].find("elastic time <= malloc's: MISSED") != std::string::npos ||
              lines[0].find("elastic time <= malloc's: inconclusive, load average") != std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("timings taken at load average"), std::string::npos) << lines[1];
  EXPECT_NE(s.summary(result).find("best of 3 runs"), std::string::npos);

  s.repeat = 0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

TEST(MachineLoadTest, ABusyMachineMakesATimingInconclusive) {
  EXPECT_EQ((MachineLoad{.load = 1.5, .cores = 2}).judge("goal", true), "goal: met");
  EXPECT_EQ((MachineLoad{.load = 1.5, .cores = 2}).judge("goal", false), "goal: MISSED");
  EXPECT_EQ((MachineLoad{.load = 7.6, .cores = 2}).judge("goal", true),
            "goal: inconclusive, load average 7.60 on 2 cores: busier than its cores");
}

TEST_F(Scenarios, OneLoaderRecordsEveryAlignmentAndNarrowBits) {
  OneLoaderScenario s;
  s.classes = 300;
  BackendRun r = run(s, "elastic");
  ASSERT_EQ(r.samples.size(), 3u);
  for (const auto& x : r.samples) {
    EXPECT_TRUE(x.extra.contains("narrow_class_bits"));
    EXPECT_TRUE(x.extra.contains("class_committed"));
  }
  // Same classes at every alignment; wider alignment costs class space.
  EXPECT_EQ(r.samples[0].live, r.samples[2].live);
  EXPECT_LE(r.samples[0].extra["class_committed"].get<std::size_t>(),
            r.samples[2].extra["class_committed"].get<std::size_t>());
  BackendRun m = run(s, "malloc");
  EXPECT_FALSE(m.samples[0].extra.contains("narrow_class_bits"));
}

// A small `threads` run: 1 and 2 threads, loaders of 50 classes. Two threads at most: more would
// give glibc more per-thread arenas, which stay with the test process and disturb the malloc
// figures of the lab tests that follow.
ThreadsScenario small_threads(std::size_t classes, std::size_t repeat, const char* mode) {
  ThreadsScenario s;
  s.classes = classes;
  s.classes_per_loader = 50;
  s.thread_counts = {1, 2};
  s.repeat = repeat;
  s.mode = mode;
  return s;
}

TEST_F(Scenarios, ThreadsMeasuresEachThreadCountAndFreesEverything) {
  ThreadsScenario s = small_threads(400, 2, "own");
  for (const char* backend : {"elastic", "malloc"}) {
    BackendRun r = run(s, backend);
    ASSERT_EQ(r.samples.size(), 6u) << backend << ": two load samples per thread count (repeat 2), one unload";
    EXPECT_EQ(at(r, "load", 1).live, at(r, "load", 2).live) << "the same classes whatever the thread count";
    EXPECT_EQ(at(r, "unload", 2).live, 0u);
  }
}

// The timing verdict judges the load the machine had before the scenario's own threads ran: its
// 4..32-thread rows raise the 1-minute average by themselves, and judged at the end every run on
// 2 cores came out "inconclusive".
TEST_F(Scenarios, ThreadsVerdictJudgesTheLoadBeforeItsOwnThreads) {
  ThreadsScenario s = small_threads(200, 1, "own");
  RunResult result;
  result.backends.push_back(run(s, "elastic"));
  s.load_before = MachineLoad{.load = 0.5, .cores = 2};
  std::vector<std::string> quiet = s.verdict(result);
  ASSERT_EQ(quiet.size(), 2u);
  EXPECT_TRUE(quiet[0].find("(goal >= 1.8: met)") != std::string::npos ||
              quiet[0].find("(goal >= 1.8: MISSED)") != std::string::npos)
      << quiet[0];
  EXPECT_NE(quiet[1].find("load average 0.50 on 2 cores before the run"), std::string::npos) << quiet[1];
  s.load_before = MachineLoad{.load = 7.6, .cores = 2};
  std::vector<std::string> busy = s.verdict(result);
  EXPECT_NE(busy[0].find("inconclusive, load average 7.60 on 2 cores"), std::string::npos) << busy[0];
  EXPECT_NE(s.summary(result).find("load average 7.60 on 2 cores before the run"), std::string::npos);
}

// The seeds' app-loader case: every thread loads into one loader (MS_LOADER_SHARED for
// libmetaspace, one lock around a malloc loader), the same classes as in the own mode.
TEST_F(Scenarios, ThreadsSharedModeLoadsTheSameClassesIntoOneLoader) {
  ThreadsScenario s = small_threads(400, 1, "both");
  for (const char* backend : {"elastic", "malloc"}) {
    BackendRun r = run(s, backend);
    ASSERT_EQ(r.samples.size(), 8u) << backend << ": per mode one load sample per thread count, one unload";
    EXPECT_EQ(at(r, "load_shared", 1).live, at(r, "load_shared", 2).live) << backend;
    EXPECT_EQ(at(r, "load_shared", 2).live, at(r, "load", 2).live) << backend << ": both modes load the same";
    EXPECT_EQ(at(r, "load_shared", 2).extra["mode"], "shared");
    EXPECT_EQ(at(r, "unload_shared", 2).live, 0u);
  }
}

TEST_F(Scenarios, MicroLoadsOneClassPerLoader) {
  MicroScenario s;
  s.loaders = 200;
  BackendRun r = run(s, "elastic");
  ASSERT_EQ(r.samples.size(), 11u);
  EXPECT_EQ(at(r, "load", 5).extra["loaders"], 200);
  EXPECT_EQ(at(r, "load", 5).extra["classes"], 200);
  EXPECT_EQ(at(r, "unload", 5).live, 0u);
}

}  // namespace
}  // namespace lab
