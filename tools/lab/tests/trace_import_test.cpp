#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "trace/hotspot_import.hpp"
#include "trace/trace_reader.hpp"

namespace lab {
namespace {

std::string temp_path(const std::string& name) { return testing::TempDir() + "trace_import_test_" + name; }

std::string write_text(const std::string& name, const std::string& text) {
  const auto path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string data(const std::string& name) { return std::string(LAB_TEST_DATA_DIR) + "/" + name; }

// The trace's records as text (after the header), one per line, to compare whole.
std::string trace_text(const std::string& path) {
  TraceReader reader(path);
  std::string out;
  TraceEvent e;
  while (reader.next(e)) {
    switch (e.type) {
      case TraceEvent::Type::born: out += "B " + std::to_string(e.loader) + " " + loader_kind_name(e.kind); break;
      case TraceEvent::Type::allocate:
        out += "A " + std::to_string(e.loader) + (e.space == Space::klass ? " c " : " n ") + std::to_string(e.bytes) +
               " " + std::to_string(e.allocation);
        break;
      case TraceEvent::Type::free: out += "F " + std::to_string(e.loader) + " " + std::to_string(e.allocation); break;
      case TraceEvent::Type::dies: out += "D " + std::to_string(e.loader); break;
      case TraceEvent::Type::marker:
        out += "M " + e.label;
        for (const auto& [k, v] : e.figures) out += " " + k + "=" + std::to_string(v);
        break;
    }
    out += "\n";
  }
  return out;
}

ImportCounts import_text(const std::string& name, const std::string& log, const std::string& trace) {
  TraceWriter writer(trace, "test");
  const auto counts = import_hotspot_log(write_text(name, log), writer);
  writer.finish();
  return counts;
}

std::string import_error(const std::string& name, const std::string& log) {
  try {
    import_text(name, log, temp_path(name + ".trace"));
  } catch (const HotSpotLogError& e) {
    return e.what();
  }
  return "no error";
}

// A hand-made log with the traps of hotspot-ul-log.md: arena and CLMS addresses reused by a second
// loader, the inner free-block-list line, a real free beside HotSpot's own wastage, an unknown line.
const std::string kLog =
    "[1ns][7] Compressed class space mapped at: 0x80000000-0xc0000000, reserved size: 1073741824\n"
    "[2ns][7] Arena @0x100 (non-class arena): born.\n"
    "[3ns][7] Arena @0x200 (class arena): born.\n"
    "[4ns][7] CLMS @0x300 : born (nonclass arena: 0x100, class arena: 0x200.\n"
    "[5ns][7] Arena @0x100 (non-class arena): requested 10 words.\n"
    "[6ns][7] Arena @0x100 (non-class arena): allocated new chunk @0x9, u, base 0x1000, level lv12 for requested word size 10\n"
    "[7ns][7] Arena @0x100 (non-class arena): returning block (@0x1000 word size 10) taken from arena, no wastage\n"
    "[8ns][7] Metaspace::allocate: type 10 return 0x1000.\n"
    "[9ns][7] Arena @0x200 (class arena): allocated new chunk @0xa, u, base 0x80000000, level lv13 for requested word size 60\n"
    "[10ns][7] Arena @0x200 (class arena): returning block (@0x80000000 word size 60) taken from arena, no wastage\n"
    "[11ns][7] Arena @0x100 (non-class arena): added to fbl: block (@0x1000 word size 10), (now: 1, 10).\n"
    "[12ns][7] Arena @0x100 (non-class arena): returning block (@0x1000 word size 4) with wastage block (@0x1020 word size 6) - taken from fbl (now: 0, 0).\n"
    "[13ns][7] Arena @0x100 (non-class arena): returning block (@0x1000 word size 4) taken from fbl, wastage block (@0x1020 word size 6)\n"
    "[14ns][7] Arena @0x100 (non-class arena): added to fbl: block (@0x1020 word size 6), (now: 1, 6).\n"
    "[15ns][7] something else entirely\n"
    "[16ns][7] VsListNode @0x7 base 0x1000 : ... committed 8192 additional words.\n"
    "[17ns][7] VsListNode @0x8 base 0x80000000 : ... committed 1024 additional words.\n"
    "[18ns][7] CLMS @0x300 : dies.\n"
    "[19ns][7] Arena @0x100 (non-class arena): returned 1 chunks, total capacity 10 words.\n"
    "[20ns][7] Arena @0x100 (non-class arena): : dies.\n"
    "[21ns][7] Arena @0x200 (class arena): : dies.\n"
    "[22ns][7] Arena @0x100 (non-class arena): born.\n"
    "[23ns][7] Arena @0x200 (class arena): born.\n"
    "[24ns][7] CLMS @0x300 : born (nonclass arena: 0x100, class arena: 0x200.\n"
    "[25ns][7] Arena @0x100 (non-class arena): allocated new chunk @0xb, u, base 0x1000, level lv14 for requested word size 3\n"
    "[26ns][7] Arena @0x100 (non-class arena): returning block (@0x1000 word size 3) taken from arena, no wastage\n"
    "[27ns][7] VsListNode @0x7 base 0x1000 : ... uncommitted 4096 words.\n";

TEST(HotSpotImport, FreshIdsPairedArenasFreesAndWastage) {
  const auto trace = temp_path("traps.trace");
  const auto counts = import_text("traps.log", kLog, trace);
  EXPECT_EQ(counts.loaders, 2u);
  EXPECT_EQ(counts.deaths, 1u);
  EXPECT_EQ(counts.allocations, 4u);
  EXPECT_EQ(counts.class_allocations, 1u);
  EXPECT_EQ(counts.frees, 1u);
  EXPECT_EQ(counts.wastage_blocks, 1u);
  EXPECT_EQ(counts.unannounced_wastage, 0u);
  EXPECT_EQ(counts.unknown_lines, 1u);
  EXPECT_EQ(counts.micro_loaders, 1u);
  EXPECT_EQ(counts.hotspot_committed_bytes, (8192u + 1024u - 4096u) * 8u);
  EXPECT_EQ(counts.live_bytes, 24u);
  EXPECT_EQ(trace_text(trace),
            "B 0 standard\n"
            "A 0 n 80 0\n"
            "A 0 c 480 1\n"
            "F 0 0\n"
            "A 0 n 32 2\n"
            // HotSpot's committed peak: right before the first death after commits.
            "M peak committed=73728 used=560 class_committed=8192 class_used=480\n"
            "D 0\n"
            "M unload committed=73728 used=0 class_committed=8192 class_used=0\n"
            "B 1 micro\n"
            "A 1 n 24 3\n"
            "M exit committed=40960 used=24 class_committed=8192 class_used=0\n");
}

// A standard loader whose non-class arena was handed a smaller free chunk (1 KiB) than its policy's
// 4 KiB, while its class arena got the standard 2 KiB: the class arena's vote makes it standard.
TEST(HotSpotImport, TheLargerKindOfTheTwoArenasFirstChunksWins) {
  const std::string log =
      "[1ns][7] Compressed class space mapped at: 0x80000000-0xc0000000, reserved size: 1073741824\n"
      "[2ns][7] Arena @0x100 (non-class arena): born.\n"
      "[3ns][7] Arena @0x200 (class arena): born.\n"
      "[4ns][7] CLMS @0x300 : born (nonclass arena: 0x100, class arena: 0x200.\n"
      "[5ns][7] Arena @0x100 (non-class arena): allocated new chunk @0x9, u, base 0x1000, level lv14 for requested word size 10\n"
      "[6ns][7] Arena @0x200 (class arena): allocated new chunk @0xa, u, base 0x80000000, level lv13 for requested word size 60\n"
      "[7ns][7] Arena @0x100 (non-class arena): returning block (@0x1000 word size 10) taken from arena, no wastage\n"
      "[8ns][7] Arena @0x200 (class arena): returning block (@0x80000000 word size 60) taken from arena, no wastage\n";
  const auto trace = temp_path("votes.trace");
  const auto counts = import_text("votes.log", log, trace);
  EXPECT_EQ(counts.loaders, 1u);
  EXPECT_EQ(counts.micro_loaders, 0u);
  EXPECT_EQ(trace_text(trace).rfind("B 0 standard\n", 0), 0u) << trace_text(trace);
}

TEST(HotSpotImport, MalformedKnownLinesStopWithFileLineAndExpectation) {
  std::string bad = kLog;
  bad.replace(bad.find("(@0x80000000 word size 60)"), 26, "(@0x80000000 word size sixty)");
  const std::string message = import_error("bad.log", bad);
  EXPECT_NE(message.find("bad.log:10: malformed"), std::string::npos) << message;
  EXPECT_NE(message.find("expected 'returning block (@0x.. word size N)"), std::string::npos) << message;

  // The head lost to rotation: an arena that allocates without being born.
  const std::string rotated = kLog.substr(kLog.find("[5ns]"));
  const std::string r = import_error("rotated.log", rotated);
  EXPECT_NE(r.find("rotated.log:3: an allocation in arena @0x100, which was never born"), std::string::npos) << r;
  EXPECT_NE(r.find("filecount=0"), std::string::npos) << r;

  EXPECT_NE(import_error("cut.log", kLog.substr(0, kLog.size() - 5)).find("ends in the middle of a line"),
            std::string::npos);
  const std::string mixed = import_error("mixed.log", "Arena @0x1 (non-class sm): : born.\nArena @0x2 (non-class arena): born.\n");
  EXPECT_NE(mixed.find("mixed.log:2: arena lines of two JDK dialects"), std::string::npos) << mixed;
  EXPECT_NE(import_error("nothing.log", "hello\nworld\n").find("no 'CLMS @.. : born' line"), std::string::npos);
}

// Counts of the fixtures as the logs show them, computed independently of the importer with
// tools/lab/tests/data/count-hotspot-log.awk (the rules of hotspot-ul-log.md: outer "returning
// block" lines are allocations, "added to fbl" is wastage iff its address was announced as a
// wastage block, otherwise a free), on the raw logs recorded with Temurin 25.0.3 (see data/README.md).
struct Expected {
  const char* trace;
  std::uint64_t loaders, deaths, allocations, class_allocations, allocated_bytes, frees;
};
constexpr Expected kFixtures[] = {
    {"jdk25-version.trace.gz", 1, 0, 29101, 473, 3989040, 22},
    {"jdk25-javac-hello.trace.gz", 40, 0, 120343, 2999, 18346920, 92},
    {"jdk25-unload.trace.gz", 66, 60, 50387, 986, 6909272, 115},
    {"jdk25-coh-unload.trace.gz", 66, 60, 50417, 986, 6921736, 115},
    {"jdk25-interleave.trace.gz", 407, 400, 66509, 1659, 8638440, 115},
    {"jdk25-many-loaders.trace.gz", 427, 420, 78089, 2135, 10297248, 131},
    {"jdk25-javac-sample.trace.gz", 59, 0, 68569, 1953, 11085968, 104},
    {"jdk25-jshell.trace.gz", 82, 0, 101315, 2948, 16127096, 124},
    {"jdk25-unload-cds.trace.gz", 66, 60, 6567, 140, 639648, 0},
    {"jdk25-ml-10-20-60.trace.gz", 807, 800, 87518, 2623, 11309048, 132},
};

TEST(HotSpotImport, FixtureTracesHoldWhatTheLogsShow) {
  for (const auto& x : kFixtures) {
    TraceReader reader(data(x.trace));
    std::uint64_t born = 0, deaths = 0, allocations = 0, class_allocations = 0, bytes = 0, frees = 0, exits = 0;
    TraceEvent e;
    while (reader.next(e)) {
      // At a GC's end the figures rebuilt from the log are the ones HotSpot prints itself (in whole
      // KiB, rounded down): an independent check of the commit and used accounting.
      if (e.type == TraceEvent::Type::marker && e.label == "gc") {
        EXPECT_EQ(e.figure("committed"), e.figure("reported_committed")) << x.trace << " gc " << e.figure("gc");
        EXPECT_EQ(e.figure("used") / 1024, e.figure("reported_used") / 1024) << x.trace << " gc " << e.figure("gc");
      }
      born += e.type == TraceEvent::Type::born;
      deaths += e.type == TraceEvent::Type::dies;
      frees += e.type == TraceEvent::Type::free;
      exits += e.type == TraceEvent::Type::marker && e.label == "exit" && e.has_figure("reported_committed");
      if (e.type == TraceEvent::Type::allocate) {
        ++allocations;
        class_allocations += e.space == Space::klass;
        bytes += e.bytes;
      }
    }
    EXPECT_EQ(born, x.loaders) << x.trace;
    EXPECT_EQ(deaths, x.deaths) << x.trace;
    EXPECT_EQ(allocations, x.allocations) << x.trace;
    EXPECT_EQ(class_allocations, x.class_allocations) << x.trace;
    EXPECT_EQ(bytes, x.allocated_bytes) << x.trace;
    EXPECT_EQ(frees, x.frees) << x.trace;
    EXPECT_EQ(exits, 1u) << x.trace << ": HotSpot's exit statistics";
  }
}

// The one raw log small enough to keep (gzip, 1.2 MB): imported here end to end.
TEST(HotSpotImport, RealLogOfJavaVersion) {
  const auto trace = temp_path("version.trace.gz");
  TraceWriter writer(trace, "test");
  const auto counts = import_hotspot_log(data("jdk25-version.log.gz"), writer);
  writer.finish();
  EXPECT_EQ(counts.loaders, 1u);
  EXPECT_EQ(counts.boot_loaders, 1u);
  EXPECT_EQ(counts.allocations, 29101u);
  EXPECT_EQ(counts.class_allocations, 473u);
  EXPECT_EQ(counts.allocated_bytes, 3989040u);
  EXPECT_EQ(counts.frees, 22u);
  EXPECT_EQ(counts.wastage_blocks, 23u);
  EXPECT_EQ(counts.unannounced_wastage, 0u);
  // PrintMetaspaceStatisticsAtExit of the same run: "Both: 3.80 MB used", "3.88 MB committed".
  EXPECT_EQ(counts.hotspot_committed_bytes, 4063232u);  // 3.875 MiB
  EXPECT_EQ(counts.unknown_lines, 173u);  // chunk manager bookkeeping, start-up lines
  EXPECT_NEAR(static_cast<double>(counts.hotspot_used_bytes) / (1024.0 * 1024.0), 3.80, 0.005);
  // The fixture trace is this log's import by `record`, whose exit marker also has HotSpot's exit
  // statistics: everything before that marker is the same.
  const auto without_exit = [](const std::string& text) { return text.substr(0, text.rfind("M exit")); };
  EXPECT_EQ(without_exit(trace_text(trace)), without_exit(trace_text(data("jdk25-version.trace.gz"))));
}

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

// JDK 16-21 log their arenas as "(non-class sm)" with the size on a "requested N words." line and
// the address on "returning 0x..", or, for a free-block-list hit, only on the thread's next
// "Metaspace::allocate: ... return 0x.." line. JDK 21 is not served for this machine, so this log is
// written by hand from JDK 21's log format (metaspaceArena.cpp, classLoaderMetaspace.cpp): two
// threads whose lines interleave after the arena's lock is dropped, a hit in the free-block list,
// a "deallocating" free, a one-word request (HotSpot takes two), a GC and a death.
TEST(HotSpotImport, Jdk16To21DialectFromJdk21Format) {
  const auto trace = temp_path("jdk21.trace");
  TraceWriter writer(trace, "test");
  const auto counts = import_hotspot_log(data("jdk21-handmade.log"), writer);
  writer.finish();
  EXPECT_EQ(counts.dialect, Dialect::jdk16_21);
  EXPECT_EQ(counts.loaders, 1u);
  EXPECT_EQ(counts.deaths, 1u);
  EXPECT_EQ(counts.allocations, 4u);
  EXPECT_EQ(counts.frees, 1u);
  EXPECT_EQ(counts.unknown_lines, 1u);
  EXPECT_EQ(counts.gcs, 1u);
  EXPECT_EQ(counts.live_bytes, 0u);
  EXPECT_EQ(trace_text(trace),
            "B 0 standard\n"
            "A 0 n 80 0\n"
            "A 0 c 528 1\n"
            "F 0 0\n"
            // Thread 12's one word is logged whole before thread 11's hit gets its address.
            "A 0 n 8 2\n"
            "A 0 n 32 3\n"
            "M gc committed=73728 used=624 class_committed=8192 class_used=528 gc=0 reported_used=0 "
            "reported_committed=73728\n"
            "D 0\n"
            "M exit committed=40960 used=0 class_committed=8192 class_used=0\n");
  // A hit whose size line is missing is a broken log, said with the line.
  std::string log = read_text(data("jdk21-handmade.log"));
  log.erase(log.find("[6000ns]"), log.find("[6100ns]") - log.find("[6000ns]"));
  const std::string e = import_error("no-request.log", log);
  EXPECT_NE(e.find("no-request.log:18: 'Arena @0x00007f0000001000 (non-class sm): taken from fbl (now: 1, 6).' "
                   "without a 'requested N words.' line"),
            std::string::npos)
      << e;
}

// Real JDK 17 logs (OpenJDK 17.0.19, data/README.md): `java -version` as a user runs it (class-data
// sharing on: 61 KB) and Unload. Counts by tools/lab/tests/data/count-hotspot-log-jdk17.awk, not the
// importer; at every GC the committed and used rebuilt from the log are HotSpot's own.
TEST(HotSpotImport, Jdk17RealLogs) {
  struct Case {
    const char* log;
    std::uint64_t loaders, deaths, allocations, class_allocations, allocated_bytes, gcs;
  };
  for (const Case& x : {Case{"jdk17-version.log.gz", 1, 0, 857, 3, 54216, 0},
                        Case{"jdk17-unload.log.gz", 74, 60, 5932, 151, 686240, 4}}) {
    const auto trace = temp_path(std::string(x.log) + ".trace");
    TraceWriter writer(trace, "test");
    const auto counts = import_hotspot_log(data(x.log), writer);
    writer.finish();
    EXPECT_EQ(counts.dialect, Dialect::jdk16_21) << x.log;
    EXPECT_EQ(counts.loaders, x.loaders) << x.log;
    EXPECT_EQ(counts.deaths, x.deaths) << x.log;
    EXPECT_EQ(counts.allocations, x.allocations) << x.log;
    EXPECT_EQ(counts.class_allocations, x.class_allocations) << x.log;
    EXPECT_EQ(counts.allocated_bytes, x.allocated_bytes) << x.log;
    EXPECT_EQ(counts.gcs, x.gcs) << x.log;
    EXPECT_EQ(counts.boot_loaders, 1u) << x.log;
    TraceReader reader(trace);
    TraceEvent e;
    std::uint64_t gcs = 0;
    while (reader.next(e)) {
      if (e.type != TraceEvent::Type::marker || e.label != "gc") continue;
      ++gcs;
      EXPECT_EQ(e.figure("committed"), e.figure("reported_committed")) << x.log << " gc " << e.figure("gc");
      EXPECT_EQ(e.figure("used") / 1024, e.figure("reported_used") / 1024) << x.log << " gc " << e.figure("gc");
    }
    EXPECT_EQ(gcs, x.gcs) << x.log;
  }
}

// JDK 11-15 log no allocation: their logs are refused with what to do instead. Written by hand from
// JDK 11's log format (spaceManager.cpp); JDK 11 is not served for this machine.
TEST(HotSpotImport, Jdk11LogIsRefusedWithAWayOut) {
  const std::string e = import_error("jdk11.log", read_text(data("jdk11-handmade.log")));
  EXPECT_NE(e.find("jdk11.log:1: this is a JDK 11-15 log"), std::string::npos) << e;
  EXPECT_NE(e.find("--java JDK_HOME"), std::string::npos) << e;
}

}  // namespace
}  // namespace lab
