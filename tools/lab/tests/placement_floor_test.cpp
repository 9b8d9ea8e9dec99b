// The lab's placement floor (trace/placement_floor.hpp) against figures worked out by hand from
// docs/placement-bound.md's formula, and on a real fixture against the figure that page gives.
// (lab_placement_bound checks it against scripts/placement-bound.py at every marker.)
#include "trace/placement_floor.hpp"

#include <gtest/gtest.h>

#include <string>

#include "output/trace_summary.hpp"
#include "scenarios/replay.hpp"

namespace lab {
namespace {

TraceEvent born(std::uint64_t loader, LoaderKind kind) {
  TraceEvent e;
  e.type = TraceEvent::Type::born;
  e.loader = loader;
  e.kind = kind;
  return e;
}

TraceEvent allocate(std::uint64_t loader, std::uint64_t id, std::uint64_t bytes, Space space = Space::nonclass) {
  TraceEvent e;
  e.type = TraceEvent::Type::allocate;
  e.loader = loader;
  e.allocation = id;
  e.bytes = bytes;
  e.space = space;
  return e;
}

TraceEvent freed(std::uint64_t loader, std::uint64_t id) {
  TraceEvent e;
  e.type = TraceEvent::Type::free;
  e.loader = loader;
  e.allocation = id;
  return e;
}

TraceEvent dies(std::uint64_t loader) {
  TraceEvent e;
  e.type = TraceEvent::Type::dies;
  e.loader = loader;
  return e;
}

TraceEvent marker(const std::string& label) {
  TraceEvent e;
  e.type = TraceEvent::Type::marker;
  e.label = label;
  return e;
}

// Four standard loaders of 1 KiB each, two die: p = 1/2, X = 4 loaders a page, so a survivor's
// bytes cost (X / p) min(f(4) / 4, f(5) / 4) = 8 * 0.234375 = 1.875 times themselves; the boot
// loader's 1 000 bytes (rounded to 8: 1 000) cost themselves. Bookkeeping: two live loader objects
// (128 bytes each) and two remembered dead handles (4 bytes each).
TEST(PlacementFloor, MatchesTheFormulaWorkedByHand) {
  PlacementFloor floor;
  floor.add(born(0, LoaderKind::boot));
  floor.add(allocate(0, 1, 997));
  std::uint64_t id = 2;
  for (std::uint64_t l = 1; l <= 4; ++l) {
    floor.add(born(l, LoaderKind::standard));
    floor.add(allocate(l, id++, 1024));
  }
  floor.add(dies(2));
  floor.add(dies(4));
  floor.add(marker("after"));
  // The end of the run of deaths has its point (as the replay has a sample there), then the marker.
  ASSERT_EQ(floor.points().size(), 2u);
  EXPECT_EQ(floor.points()[0].label, "deaths-1");
  EXPECT_DOUBLE_EQ(floor.points()[0].with_bookkeeping, floor.points()[1].with_bookkeeping);
  const auto& p = floor.points()[1];
  EXPECT_EQ(p.live, 1000u + 2 * 1024);
  EXPECT_DOUBLE_EQ(p.memory, (1000 + 2048 * 1.875) / 3048);
  EXPECT_DOUBLE_EQ(p.with_bookkeeping, (1000 + 2048 * 1.875 + 2 * 128 + 2 * 4) / 3048);
  EXPECT_DOUBLE_EQ(PlacementFloor::space_ratio(1024, 0.5, 4096), 1.875);
}

// A loader's size is the most it held (a block freed before the marker still counted), and
// loaders born after deaths are a cohort of their own: with none of them dead they cost their
// bytes exactly, whatever the older cohort's survival.
TEST(PlacementFloor, PeaksAndCohorts) {
  PlacementFloor floor;
  floor.add(born(1, LoaderKind::standard));
  floor.add(allocate(1, 1, 1024));
  floor.add(allocate(1, 2, 1024));
  floor.add(freed(1, 2));  // peak 2 KiB, holds 1 KiB
  floor.add(born(2, LoaderKind::standard));
  floor.add(allocate(2, 3, 2048));
  floor.add(dies(2));
  floor.add(born(3, LoaderKind::standard));  // a new cohort: it follows a death
  floor.add(allocate(3, 4, 4096));
  floor.add(marker("m"));
  ASSERT_EQ(floor.points().size(), 2u);  // deaths-1 (before loader 3's birth), m
  const auto& p = floor.points()[1];
  EXPECT_EQ(p.live, 1024u + 4096);
  // Cohort 1: b = 2 KiB, p = 1/2, X = 2: (2 / 0.5) * min(f(2) / 2, f(3) / 2) = 4 * 0.375.
  const double first = 1024 * PlacementFloor::space_ratio(2048, 0.5, 4096);
  EXPECT_DOUBLE_EQ(first, 1024 * 1.5);
  EXPECT_DOUBLE_EQ(p.memory, (first + 4096) / (1024 + 4096));
}

// Several deaths in a row are one run, with one point after its last death; a run that ends the
// trace gets it from finish().
TEST(PlacementFloor, ARunOfDeathsHasOnePointAtItsEnd) {
  PlacementFloor floor;
  for (std::uint64_t l = 1; l <= 3; ++l) {
    floor.add(born(l, LoaderKind::standard));
    floor.add(allocate(l, l, 512));
  }
  floor.add(dies(1));
  floor.add(dies(2));
  EXPECT_TRUE(floor.points().empty());
  floor.finish();
  ASSERT_EQ(floor.points().size(), 1u);
  EXPECT_EQ(floor.points()[0].label, "deaths-1");
  EXPECT_EQ(floor.points()[0].live, 512u);
  floor.finish();  // nothing pending: no second point
  EXPECT_EQ(floor.points().size(), 1u);
}

// The worst marker is chosen among those with at least 1 % of the largest live, as the lab's
// ratios are: a marker where almost nothing lives does not decide.
TEST(PlacementFloor, WorstSkipsMarkersWithAlmostNothingLive) {
  PlacementFloor floor;
  floor.add(born(1, LoaderKind::standard));
  floor.add(allocate(1, 1, 8));
  floor.add(marker("tiny"));  // 8 bytes live, a 128-byte loader object: 17x
  floor.add(allocate(1, 2, 1 << 20));
  floor.add(marker("big"));
  ASSERT_EQ(floor.points().size(), 2u);
  EXPECT_GT(floor.points()[0].with_bookkeeping, 10.0);
  const auto worst = floor.worst();
  ASSERT_TRUE(worst.has_value());
  EXPECT_EQ(worst->label, "big");
}

// docs/placement-bound.md: interleave's floor is 1.047 with the loader objects, 1.044 without.
TEST(PlacementFloor, InterleaveFixtureIsTheDocumentedFigure) {
  const auto worst = placement_floor(std::string(LAB_TEST_DATA_DIR) + "/jdk25-interleave.trace.gz");
  ASSERT_TRUE(worst.has_value());
  EXPECT_NEAR(worst->with_bookkeeping, 1.0471, 0.00005);
  EXPECT_NEAR(worst->memory, 1.0441, 0.00005);
}

// The summary names each missed trace's floor, and says when the floor itself is above the goal.
TEST(PlacementFloor, SummaryGoalLineCarriesTheFloor) {
  TraceSummary summary;
  TraceSummaryRow a, b, c, d;
  a.trace = "near", a.backend = "elastic", a.max_footprint_live = 1.08;
  b.trace = "far", b.backend = "elastic", b.max_footprint_live = 1.19;
  c.trace = "just", c.backend = "elastic", c.max_footprint_live = 1.0504;
  a.peak_live = b.peak_live = c.peak_live = 8 << 20;
  // `java -version` with class-data sharing: named apart, not judged.
  d.trace = "tiny", d.backend = "elastic", d.max_footprint_live = 1.471, d.peak_live = 61 * 1024;
  summary.rows = {a, b, c, d};
  summary.add_floor("near", {"gc", 1000, 1.044, 1.048});
  summary.add_floor("far", {"gc", 1000, 1.097, 1.104});
  const std::string line = summary.goal_line();
  EXPECT_NE(line.find("near 1.080 (floor 1.048)"), std::string::npos) << line;
  EXPECT_NE(line.find("far 1.190 (floor 1.104: above the goal itself)"), std::string::npos) << line;
  // Just above the goal: four decimals, so that the figure does not read as 1.050.
  EXPECT_NE(line.find("just 1.0504"), std::string::npos) << line;
  EXPECT_EQ(line.find("tiny 1.471"), std::string::npos) << line;
  EXPECT_NE(line.find("\ntoo small to judge (peak live < 256 KiB): tiny (peak live 61 KiB)\n"), std::string::npos)
      << line;
  EXPECT_EQ(summary.to_json()["placement_floor"].size(), 2u);
}

// A single replay's verdict names the trace's floor too.
TEST(PlacementFloor, ReplayVerdictNamesTheFloor) {
  ReplayScenario replay;
  replay.trace = std::string(LAB_TEST_DATA_DIR) + "/jdk25-interleave.trace.gz";
  const auto lines = replay.verdict(RunResult{});
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("placement floor of the trace (docs/placement-bound.md): 1.047"), std::string::npos)
      << lines[0];
  replay.trace = "/nonexistent.trace";
  const auto missing = replay.verdict(RunResult{});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_NE(missing[0].find("not computed"), std::string::npos) << missing[0];
}

}  // namespace
}  // namespace lab
