#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/malloc_backend.hpp"
#include "compare/child_protocol.hpp"
#include "hotspot_reference.hpp"
#include "output/csv_output.hpp"
#include "output/html_report.hpp"
#include "output/json_output.hpp"
#include "output/table.hpp"
#include "output/verdict.hpp"
#include "runner.hpp"
#include "scenarios/interleaved.hpp"

namespace lab {
namespace {

RunResult tiny_result() {
  register_malloc_backends();
  InterleavedScenario s;
  s.loaders = 4;
  s.classes_per_loader = 20;
  RunResult r;
  r.scenario = s.name();
  r.params = {{"seed", 42}};
  r.machine = describe_machine();
  r.backends.push_back(run_in_process(s, "malloc", WorkloadParams{}, BackendOptions{}, false));
  r.references.push_back(load_hotspot_reference(find_hotspot_reference("")));
  r.verdict = generic_verdict(r, s.elastic_goal());
  return r;
}

TEST(Output, JsonHasTheDocumentedSchema) {
  const nlohmann::json j = to_json(tiny_result());
  EXPECT_EQ(j.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(j.at("scenario"), "interleaved");
  EXPECT_EQ(j.at("params").at("seed"), 42);
  for (const char* k : {"cpus", "kernel", "page_bytes", "time_utc"}) EXPECT_TRUE(j.at("machine").contains(k)) << k;
  const auto& b = j.at("backends").at(0);
  EXPECT_EQ(b.at("name"), "malloc");
  EXPECT_TRUE(b.at("settings").is_object());
  ASSERT_EQ(b.at("samples").size(), 11u);
  for (const char* k : {"phase", "step", "live", "used", "committed", "rss", "mappings", "elapsed_ns", "extra"})
    EXPECT_TRUE(b.at("samples").at(3).contains(k)) << k;
  EXPECT_EQ(j.at("references").at(0).at("samples").size(), 21u);
  EXPECT_FALSE(j.at("verdict").empty());
}

// A step measured again (threads: --repeat) is its own row with its own figures: rows are told
// apart by the repeat, not only by phase and step.
TEST(Output, RepeatedStepsKeepTheirOwnRows) {
  RunResult r;
  BackendRun b;
  b.name = "malloc";
  for (std::size_t repeat : {0, 1}) {
    Sample s;
    s.phase = "load";
    s.step = 1;
    s.live = 1000;
    s.committed = s.footprint = repeat == 0 ? 1250 : 2510;
    if (repeat > 0) s.extra["repeat"] = repeat;
    b.samples.push_back(s);
  }
  r.backends.push_back(b);
  const std::string out = format_side_by_side(r);
  EXPECT_NE(out.find("load 1 "), std::string::npos) << out;
  EXPECT_NE(out.find("load 1 #2"), std::string::npos) << out;
  EXPECT_NE(out.find("1.25"), std::string::npos) << out;
  EXPECT_NE(out.find("2.51"), std::string::npos) << "the second run's figure, not the first's again\n" << out;
}

TEST(Output, HotSpotReferenceIsTheMeasuredTable) {
  auto ref = load_hotspot_reference(find_hotspot_reference(""));
  const Sample& worst = ref.samples.at(9);  // unload 4
  EXPECT_EQ(worst.phase, "unload");
  EXPECT_EQ(worst.step, 4);
  EXPECT_NEAR(static_cast<double>(worst.committed) / worst.used, 83.31 / 38.80, 0.001);
  auto m = max_ratio(ref.samples, false);
  ASSERT_TRUE(m);
  EXPECT_NEAR(m->ratio, 102.25 / 39.59, 0.001);  // unload2 4, HotSpot's worst
  EXPECT_EQ(m->sample->phase, "unload2");
}

TEST(Output, CsvHasOneRowPerSampleAndTheExtraColumns) {
  RunResult r = tiny_result();
  const auto path = (std::filesystem::temp_directory_path() / "lab_output_test.csv").string();
  write_csv(r, path);
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("scenario,backend,phase,step,live,used,committed,footprint,rss,mappings,elapsed_ns", 0), 0u);
  EXPECT_NE(header.find("malloc_in_use"), std::string::npos);
  std::size_t rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 11u + 21u);
  std::filesystem::remove(path);
}

TEST(Output, ChildLinesRoundTrip) {
  RunResult r = tiny_result();
  ChildStreamParser parser;
  parser.feed(backend_line(r.backends[0]));
  for (const auto& s : r.backends[0].samples) parser.feed(sample_line(s));
  parser.feed(end_line());
  auto runs = parser.finish(0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].error, "");
  ASSERT_EQ(runs[0].samples.size(), r.backends[0].samples.size());
  EXPECT_EQ(to_json(runs[0].samples[5]), to_json(r.backends[0].samples[5]));
}

TEST(Output, ChildThatDiesEarlyIsReportedAsFailed) {
  ChildStreamParser parser;
  parser.feed(fmt::format(R"({{"type":"backend","schema_version":{},"name":"x","executable":"e","settings":{{}}}})",
                          kSchemaVersion));
  auto runs = parser.finish(139);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].error.find("139"), std::string::npos);
}

// A run with one elastic backend whose worst footprint is 1.5 x live at a peak live of `live` bytes.
RunResult elastic_at(std::size_t live) {
  RunResult r;
  BackendRun b;
  b.name = "elastic";
  Sample s;
  s.phase = "exit", s.step = 1, s.live = live, s.committed = s.footprint = live * 3 / 2;
  b.samples = {s};
  r.backends.push_back(b);
  return r;
}

// `java -version` with class-data sharing allocates 61 KB: too small to judge against 1.05, not
// MISSED; the same ratio on 8 MiB is MISSED.
TEST(Output, VerdictSaysTooSmallToJudgeBelow256KiBOfLive) {
  const auto tiny = generic_verdict(elastic_at(61 * 1024), 1.05);
  ASSERT_EQ(tiny.size(), 1u);
  EXPECT_NE(tiny[0].find("goal <= 1.05: too small to judge (peak live 61 KiB < 256 KiB)"), std::string::npos)
      << tiny[0];
  EXPECT_EQ(tiny[0].find("MISSED"), std::string::npos) << tiny[0];
  const auto big = generic_verdict(elastic_at(8 << 20), 1.05);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_NE(big[0].find("goal <= 1.05: MISSED"), std::string::npos) << big[0];
}

// The page a presenter opens: MISSED stands out, met and unjudged lines are marked, a table's
// first column links the pages beside it.
TEST(Output, HtmlVerdictHighlightsAndTablesLinkPages) {
  HtmlReport html("t");
  html.verdict({"max footprint/live elastic 1.077 goal <= 1.05: MISSED", "elastic 1.01 goal <= 1.05: met",
                "elastic goal <= 1.05: too small to judge (peak live 53 KiB < 256 KiB)"});
  html.table({{"trace", "ratio"}, {"jdk25-unload", "1.015"}}, ".html");
  html.link_paragraph("back: ", "summary.html", "summary");
  const std::string path = testing::TempDir() + "output_test_page.html";
  html.write(path);
  std::stringstream page;
  page << std::ifstream(path).rdbuf();
  const std::string text = page.str();
  EXPECT_NE(text.find("<div class=\"missed\">max footprint/live elastic 1.077 goal &lt;= 1.05: <strong>MISSED</strong>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<div class=\"met\">"), std::string::npos);
  EXPECT_NE(text.find("<div class=\"unjudged\">"), std::string::npos);
  EXPECT_NE(text.find("<td><a href=\"jdk25-unload.html\">jdk25-unload</a></td><td class=\"n\">1.015</td>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("back: <a href=\"summary.html\">summary</a>"), std::string::npos);
}

}  // namespace
}  // namespace lab
