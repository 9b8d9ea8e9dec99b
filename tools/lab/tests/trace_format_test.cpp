#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "backends/malloc_backend.hpp"
#include "backend_registry.hpp"
#include "trace/trace_player.hpp"
#include "trace/trace_reader.hpp"
#include "trace/trace_writer.hpp"
#include "test_support.hpp"

namespace lab {
namespace {

std::string temp_path(const std::string& name) { return testing::TempDir() + "trace_format_test_" + name; }

std::string write_text(const std::string& name, const std::string& text) {
  const auto path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<TraceEvent> read_all(const std::string& path) {
  TraceReader reader(path);
  std::vector<TraceEvent> out;
  TraceEvent e;
  while (reader.next(e)) out.push_back(e);
  return out;
}

// The message of the TraceError reading `path` raises.
std::string read_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

void write_sample(const std::string& path) {
  TraceWriter w(path, "test");
  w.born(0, LoaderKind::boot);
  w.allocate(0, Space::nonclass, 64, 0);
  w.allocate(0, Space::klass, 512, 1);
  w.born(1, LoaderKind::micro);
  w.allocate(1, Space::nonclass, 24, 2);
  w.free(1, 2);
  TraceEvent m;
  m.type = TraceEvent::Type::marker;
  m.label = "gc";
  m.figures = {{"committed", 65536}, {"used", 600}};
  w.marker(m);
  w.dies(1);
  w.finish();
}

TEST(TraceFormat, RoundTripsPlainAndCompressed) {
  for (const std::string name : {"rt.trace", "rt.trace.gz"}) {
    const auto path = temp_path(name);
    write_sample(path);
    const auto events = read_all(path);
    ASSERT_EQ(events.size(), 8u) << name;
    EXPECT_EQ(events[0].type, TraceEvent::Type::born);
    EXPECT_EQ(events[0].kind, LoaderKind::boot);
    EXPECT_EQ(events[2].space, Space::klass);
    EXPECT_EQ(events[2].bytes, 512u);
    EXPECT_EQ(events[2].allocation, 1u);
    EXPECT_EQ(events[3].kind, LoaderKind::micro);
    EXPECT_EQ(events[5].type, TraceEvent::Type::free);
    EXPECT_EQ(events[5].allocation, 2u);
    EXPECT_EQ(events[6].label, "gc");
    EXPECT_EQ(events[6].figure("committed"), 65536u);
    EXPECT_EQ(events[7].type, TraceEvent::Type::dies);
  }
  // Compressed for real: the gzip magic, not plain text.
  std::ifstream in(temp_path("rt.trace.gz"), std::ios::binary);
  unsigned char magic[2] = {};
  in.read(reinterpret_cast<char*>(magic), 2);
  EXPECT_EQ(magic[0], 0x1f);
  EXPECT_EQ(magic[1], 0x8b);
}

TEST(TraceFormat, BadInputGivesFileLineAndWhatWasExpected) {
  EXPECT_NE(read_error(write_text("garbage", "\x7f" "ELF binary stuff\n")).find("not a metaspace trace"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("empty", "")).find("empty file"), std::string::npos);
  const std::string head = "metaspace-trace 1\n# source: test\nB 0 standard\n";
  EXPECT_NE(read_error(write_text("truncated", head + "A 0 n 8 0\n")).find("truncated after 2 events"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("letter", head + "Q 1 2\nE 1\n")).find(":4: expected a record"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("space", head + "A 0 x 8 0\nE 2\n")).find(":4: expected space 'n' or 'c'"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("number", head + "A 0 n eight 0\nE 2\n")).find("expected size in bytes"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("kind", "metaspace-trace 1\nB 0 king\nE 1\n")).find(":2: expected loader kind"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("count", head + "E 5\n")).find("counts 5 events, the trace has 1"),
            std::string::npos);
  EXPECT_NE(read_error(write_text("after", head + "E 1\nD 0\n")).find("after the closing E"), std::string::npos);
  EXPECT_NE(read_error(write_text("marker", head + "M gc committed\nE 2\n")).find("expected key=number"),
            std::string::npos);
}

TEST(TraceFormat, TruncatedCompressedFileIsAnError) {
  const auto path = temp_path("cut.trace.gz");
  {
    TraceWriter w(path, "test");
    w.born(0, LoaderKind::standard);
    for (std::uint64_t i = 0; i < 200000; ++i) w.allocate(0, Space::nonclass, 8 * (1 + i % 97), i);
    w.finish();
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto cut = write_text("cut2.trace.gz", bytes.substr(0, bytes.size() / 2));
  const std::string message = read_error(cut);
  EXPECT_TRUE(message.find("truncated") != std::string::npos || message.find("unexpected end") != std::string::npos)
      << message;
}

// Replays `text` (a trace body) through malloc; returns the error or "ok <skipped frees> <live>".
std::string play(const std::string& name, const std::string& body) {
  register_malloc_backends();
  auto backend = find_backend_factory("malloc")(BackendOptions{});
  TracePlayer player(*backend);
  const std::string error = test::play_file(player, write_text(name, "metaspace-trace 1\n" + body));
  if (!error.empty()) return error;
  return "ok " + std::to_string(player.skipped_frees()) + " " + std::to_string(player.live_bytes());
}

TEST(TracePlayer, ImpossibleSequencesAreErrorsAndUnknownFreesAreCounted) {
  EXPECT_NE(play("unborn", "A 3 n 8 0\nE 1\n").find(":2: an allocation for loader 3, which was never born"),
            std::string::npos);
  EXPECT_NE(play("dead", "B 0 standard\nD 0\nA 0 n 8 0\nE 3\n").find(":4: an allocation for loader 0, which already died"),
            std::string::npos);
  EXPECT_NE(play("twice", "B 0 standard\nB 0 micro\nE 2\n").find("born twice"), std::string::npos);
  EXPECT_NE(play("order", "B 0 standard\nA 0 n 8 5\nA 0 n 8 5\nE 3\n").find("not above the previous one"),
            std::string::npos);
  EXPECT_NE(play("deathless", "D 7\nE 1\n").find("a death for loader 7, which was never born"), std::string::npos);
  // Unknown id, a second free, another loader's allocation: skipped and counted; live unchanged.
  EXPECT_EQ(play("frees", "B 0 standard\nB 1 standard\nA 0 n 16 0\nA 1 n 8 1\nF 0 9\nF 0 0\nF 0 0\nF 0 1\nE 8\n"),
            "ok 3 8");
}

}  // namespace
}  // namespace lab
