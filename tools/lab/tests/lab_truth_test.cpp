// What the lab reports is what happened: the replay writes its blocks, baselines are subtracted,
// traces with absurd contents are read in bounded memory and every error says where.
#include <gtest/gtest.h>
#include <malloc.h>
#include <fmt/format.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backend_registry.hpp"
#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "cli.hpp"
#include "harness_memory.hpp"
#include "output/trace_summary.hpp"
#include "runner.hpp"
#include "scenarios/replay.hpp"
#include "trace/trace_player.hpp"
#include "trace/trace_reader.hpp"
#include "test_support.hpp"

namespace lab {
namespace {

std::string write_text(const std::string& name, const std::string& text) {
  const auto path = testing::TempDir() + "lab_truth_test_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// A backend that hands out blocks of its own memory, zeroed, so a test can see what the player
// did with them.
class BufferBackend : public Backend {
 public:
  std::string name() const override { return "buffer"; }
  nlohmann::json settings() const override { return nlohmann::json::object(); }
  LoaderHandle create_loader(LoaderKind) override { return this; }
  void* allocate(LoaderHandle, Space, std::size_t bytes) override {
    if (bytes > 4096) throw BackendError("allocation of " + std::to_string(bytes) + " bytes refused");
    blocks.emplace_back(bytes, '\0');
    return blocks.back().data();
  }
  void deallocate(LoaderHandle, void*, std::size_t) override {}
  void destroy_loader(LoaderHandle) override {}
  void purge() override {}
  MemoryFigures figures() override { return {}; }

  std::vector<std::string> blocks;
};

std::string play(BufferBackend& backend, const std::string& name, const std::string& body) {
  TracePlayer player(backend);
  const std::string error = test::play_file(player, write_text(name, "metaspace-trace 1\n" + body));
  return error.empty() ? "ok" : error;
}

TEST(LabTruth, ReplayWritesEveryBlockItAllocates) {
  BufferBackend backend;
  backend.blocks.reserve(4);
  ASSERT_EQ(play(backend, "write", "B 0 standard\nA 0 n 24 0\nA 0 c 512 1\nE 3\n"), "ok");
  ASSERT_EQ(backend.blocks.size(), 2u);
  for (const auto& b : backend.blocks)
    EXPECT_EQ(b.find('\0'), std::string::npos) << "a block of " << b.size() << " bytes left unwritten";
}

TEST(LabTruth, SparseLoaderIdsCostNothing) {
  BufferBackend backend;
  backend.blocks.reserve(4);
  const std::size_t before = mallinfo2().uordblks;
  // Loader ids once indexed a vector: this one line cost 2.6 GB.
  EXPECT_EQ(play(backend, "sparse", "B 67108864 standard\nB 18446744073709551 micro\nA 67108864 n 8 0\nE 3\n"),
            "ok");
  EXPECT_LT(mallinfo2().uordblks, before + (1u << 20));
}

TEST(LabTruth, AFailedAllocationSaysFileAndLine) {
  BufferBackend backend;
  backend.blocks.reserve(4);
  const std::string e = play(backend, "huge", "B 0 standard\nA 0 n 8 0\nA 0 n 999999999 1\nE 3\n");
  EXPECT_NE(e.find("lab_truth_test_huge:4: allocation of 999999999 bytes refused"), std::string::npos) << e;
}

TEST(LabTruth, LinesBeyond64KiBAreRejectedAndBinaryIsEscaped) {
  BufferBackend backend;
  const std::string long_line = "# " + std::string(70 * 1024, 'x') + "\n";
  std::string e = play(backend, "long", long_line + "E 0\n");
  EXPECT_NE(e.find(":2: line longer than 65536 bytes"), std::string::npos) << e.substr(0, 200);
  e = play(backend, "binary", "Q \xff\xfe\x01 zz\nE 0\n");
  EXPECT_NE(e.find("\\xff\\xfe\\x01"), std::string::npos) << e;
  EXPECT_EQ(nlohmann::json(e).dump().find("\\u"), std::string::npos) << "valid UTF-8, so JSON can carry it";
}

TEST(LabTruth, MallocCommittedLeavesOutWhatTheProcessHeldBefore) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "malloc is ASan's in a sanitized build; glibc's statistics say nothing about it";
#endif
  register_malloc_backends();
  // The harness's own heap before the backend exists: 8 MiB in use in small blocks (not mmapped).
  std::vector<void*> before;
  for (int i = 0; i < 8 * 1024; ++i) before.push_back(std::malloc(1000));
  const std::size_t free_parts = mallinfo2().fordblks;
  auto backend = find_backend_factory("malloc")(BackendOptions{});
  // The free parts of the heap are the backend's to use (and count); the 8 MiB in use are not.
  const std::size_t start = backend->figures().committed;
  EXPECT_LT(start, free_parts + (std::size_t{1} << 20));
  auto loader = backend->create_loader(LoaderKind::standard);
  for (int i = 0; i < 16 * 1024; ++i) backend->allocate(loader, Space::nonclass, 4000);
  const std::size_t committed = backend->figures().committed;
  EXPECT_GE(committed, std::size_t{16 * 1024 * 4000}) << "committed covers what is live";
  EXPECT_LT(committed, std::max(start, std::size_t{16 * 1024 * 4000}) + (std::size_t{4} << 20));
  backend->destroy_loader(loader);
  for (void* p : before) std::free(p);
}

TEST(LabTruth, HarnessMemoryIsCountedSeparately) {
  const std::size_t before = harness_resident_bytes();
  std::pmr::vector<char> v(harness_memory());
  v.resize(4 << 20, 'x');
  EXPECT_GE(harness_resident_bytes(), before + (4u << 20));
}

TEST(LabTruth, ElasticFootprintIsCommittedPlusOverhead) {
  register_elastic_backends();
  auto backend = find_backend_factory("elastic")(BackendOptions{});
  auto loader = backend->create_loader(LoaderKind::standard);
  backend->allocate(loader, Space::nonclass, 64);
  const MemoryFigures f = backend->figures();
  EXPECT_EQ(f.footprint, f.committed + f.extra["overhead"].get<std::size_t>());
  EXPECT_GT(f.footprint, f.committed);
  backend->destroy_loader(loader);
}

TEST(LabTruth, SamplesAreThinnedBeyondTheLimit) {
  register_elastic_backends();
  std::string body;
  const int pairs = 4000;
  for (int i = 0; i < pairs; ++i) body += fmt::format("B {0} micro\nA {0} n 16 {0}\nD {0}\n", i);
  body += fmt::format("E {}\n", 3 * pairs);
  ReplayScenario scenario;
  scenario.trace = write_text("deaths.trace", "metaspace-trace 1\n" + body);
  scenario.max_samples = 100;
  const BackendRun r = run_in_process(scenario, "elastic", WorkloadParams{}, BackendOptions{}, false);
  ASSERT_EQ(r.error, "");
  // 4000 runs of deaths: 100 kept at every stride 1, 2, 4, ... : about 100 * log2(4000 / 100) + 100.
  EXPECT_LT(r.samples.size(), 800u);
  EXPECT_GT(r.samples.size(), 100u);
  EXPECT_EQ(r.samples.back().phase, "end");
  EXPECT_EQ(r.samples.back().extra["thinned_samples"].get<std::size_t>() + r.samples.size() - 2, 4000u);
}

using test::run_cli_with;

TEST(LabTruth, ManyTracesGiveOneSummaryAndFilesNamedAfterEachTrace) {
  const std::string dir = testing::TempDir() + "lab_truth_many";
  std::filesystem::remove_all(dir);
  const std::string data = LAB_TEST_DATA_DIR;
  std::string out;
  ASSERT_EQ(run_cli_with({"replay", data + "/jdk25-version.trace.gz", data + "/jdk25-unload.trace.gz", "--backends",
                             "elastic,malloc", "--quiet", "--no-plot", "--out", dir},
                            out),
            0)
      << out;
  EXPECT_NE(out.find("summary over 2 traces"), std::string::npos) << out;
  for (const char* f : {"jdk25-version.json", "jdk25-unload.json", "jdk25-unload.html", "summary.json", "summary.md",
                        "summary.html"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  std::stringstream markdown;
  markdown << std::ifstream(dir + "/summary.md").rdbuf();
  EXPECT_NE(markdown.str().find("| trace | elastic | malloc | HotSpot committed/used |"), std::string::npos)
      << markdown.str();
  EXPECT_NE(markdown.str().find("| jdk25-unload | elastic |"), std::string::npos) << markdown.str();
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["rows"].size(), 4u);
  EXPECT_EQ(summary["hotspot"].size(), 2u);
  for (const auto& r : summary["rows"]) {
    if (r["backend"] == "elastic") {
      EXPECT_LE(r["max_footprint_live"].get<double>(), 1.05) << r.dump();
      EXPECT_GT(r["overhead_live_at_max"].get<double>(), 0.0) << "the library's bookkeeping: " << r.dump();
    } else {
      EXPECT_EQ(r["overhead_live_at_max"].get<double>(), 0.0) << "a malloc has none of its own: " << r.dump();
    }
    // The worst sample's two parts add up to it.
    EXPECT_NEAR(r["committed_live_at_max"].get<double>() + r["overhead_live_at_max"].get<double>(),
                r["max_footprint_live"].get<double>(), 1e-9)
        << r.dump();
  }
  EXPECT_NE(markdown.str().find("elastic: footprint/live <= 1.05 at every sample of all 2 traces judged"),
            std::string::npos)
      << markdown.str();
  EXPECT_EQ(expand_traces({data}).size(), 11u) << "a folder is its traces";
}

// Every real JVM trace of tools/lab/tests/data through elastic, blocks written: footprint/live at
// most 1.05 at every sample whose live is at least 1 % of the peak (the summary's max f/l).
// One trace does not reach it and gets a regression bound. It kills many small loaders in random
// order, and the memory their blocks leave in granules that survivors still hold is committed
// until those die too (docs/design.md, "Small loaders").
// - interleave: 401 standard loaders of two classes each (3.4 KiB non-class, two ~590-byte
//   Klasses), allocated round-robin. Worst 1.138 with a 2 KiB class chunk and a class arena per
//   loader; 1.103 since their Klasses come from the micro pool and the class arena is made only
//   when needed (at 161 of 400 loaders alive: 298 KB of dead Klasses in shared class chunks,
//   307 KB of bookkeeping, 108 KB unused in the loaders' 4 KiB chunks).
//   1.115 at fef7bcf; 1.108 since the class space finds its node without a node map (16 KiB),
//   the page store's first bitmap page is not needed (4 KiB a space) and a loader's arenas take
//   a 320-byte slab slot (holes do not help here: no loader is born after the deaths); 1.1015
//   with the cuts that brought many-loaders under 1.05; 1.0838 since a standard loader's arenas
//   lie in its own first non-class chunk (the survivors' 4 KiB chunks had room for them; the
//   slab pages survivors' arenas held went), so it is held to 1.09.
//   Its placement floor is 1.052 (docs/placement-bound.md): 1.05 cannot be reached.
// many-loaders (267 micro and 159 standard loaders in waves, floor 1.032) is held to 1.05 now:
// worst 1.078 (after wave 6's deaths: dead micro loaders' bytes of all waves in shared chunks that
// survivors held); 1.058 since new loaders' blocks fill dead loaders' runs (MicroPool holes),
// 1.054 with the bookkeeping cuts above, 1.053 since only chunks in use record their start;
// 1.0497 with 4-byte chunk start slots, one class space header page, no node map page for one
// node and free-block structures six to a slab page (bookkeeping at the worst sample 200 -> 176
// KB; 1.9 KB of margin there); 1.0487 with the arenas in the first chunk, whose chunk doubles in
// place while it is the loader's only one (the arenas' 304 bytes otherwise pushed 46 loaders
// over a 4 KiB boundary).
TEST(LabTruth, ElasticStaysWithinItsGoalOnEveryRealTrace) {
  // Traces where 1.05 is not met, held to what the library reaches there (a regression test,
  // not the goal): interleave (floor 1.047; 1.0766 now) and Unload with class-data sharing
  // (352 KB live: fixed costs weigh; floor 1.103; 1.1670 now). docs/placement-bound.md.
  // HotSpot 17's ClassChurn, 6 waves of 200 URLClassLoaders of 24.8 KiB (17.6 non-class, 7.2
  // class) and a reflection loader each, 3 of 4 dying per wave (floor 1.056): 1.1433 while the
  // loaders' non-class chunks went 4, 4, 4, 8 KiB (4 chunks a loader, and their headers' slab
  // pages held by the survivors), 1.1396 since they start at 8 KiB and double (2 chunks; 1.1406
  // in assert builds, whose loader objects are 8 bytes larger);
  // bench/analysis.md, "Class-loading churn", has where the rest above the floor goes.
  // ManyLoaders with 10 waves of 20 loaders and 60 hidden classes meets the goal (1.0498); in
  // assert builds its loader objects are 8 bytes larger (the loader lock records its holder for
  // MS_ASSERT_LOCKED), which puts it at 1.0502.
  const std::map<std::string, double> regression_bound = {
      {"jdk25-interleave", 1.08}, {"jdk25-unload-cds", 1.175}, {"jdk17-classchurn", 1.141},
#ifdef METASPACE_ASSERTS
      {"jdk25-ml-10-20-60", 1.0505},
#endif
  };
  register_elastic_backends();
  const auto traces = expand_traces({LAB_TEST_DATA_DIR});
  ASSERT_GE(traces.size(), 8u);
  for (const auto& t : traces) {
    ReplayScenario scenario;
    scenario.trace = t;
    RunResult result;
    result.backends.push_back(run_in_process(scenario, "elastic", WorkloadParams{}, BackendOptions{}, false));
    ASSERT_EQ(result.backends[0].error, "") << t;
    TraceSummary summary;
    summary.add(trace_stem(t), result);
    ASSERT_EQ(summary.rows.size(), 1u);
    const auto known = regression_bound.find(trace_stem(t));
    const double bound = known == regression_bound.end() ? 1.05 : known->second;
    EXPECT_LE(summary.rows[0].max_footprint_live, bound) << t;
    EXPECT_GE(summary.rows[0].max_footprint_live, 1.0) << t;  // footprint never below what is live
  }
}

TEST(LabTruth, CountFlagsRejectNegativeAndAbsurdValues) {
  std::string out;
  EXPECT_EQ(run_cli_with({"spikes", "--loaders-per-batch", "-1"}, out), 2);
  EXPECT_NE(out.find("--loaders-per-batch: -1 is negative"), std::string::npos) << out;
  EXPECT_EQ(run_cli_with({"micro", "--loaders", "99999999999"}, out), 2);
  EXPECT_NE(out.find("--loaders: 99999999999 is too large"), std::string::npos) << out;
  EXPECT_EQ(run_cli_with({"bogus"}, out), 2);
  EXPECT_NE(out.find("unknown command 'bogus'"), std::string::npos) << out;
  EXPECT_EQ(run_cli_with({"--version"}, out), 0);
  EXPECT_NE(out.find(fmt::format("metaspace-lab {}.{}", MS_VERSION_MAJOR, MS_VERSION_MINOR)), std::string::npos)
      << out;
}

}  // namespace
}  // namespace lab
