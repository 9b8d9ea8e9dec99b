// Layer 1: reserve, commit and uncommit, checked against what the kernel reports in /proc/self.
#include "os/os_memory.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "os/fault_injection.hpp"
#include "support/layer_fixtures.hpp"
#include "proc_memory.hpp"

namespace metaspace {
namespace {

using proc_memory::mappings_in;
using test::FaultGuard;
using test::ReservedRange;

TEST(OsMemory, PageSizeIsTheSystemPageSize) {
  EXPECT_EQ(os::page_size(), static_cast<size_t>(sysconf(_SC_PAGESIZE)));
}

TEST(OsMemory, ReserveIsAlignedAndInaccessible) {
  ReservedRange r(8 * MiB, 4 * MiB);
  ASSERT_NE(r.base(), nullptr);
  EXPECT_TRUE(is_aligned(r.base(), 4 * MiB));
  auto maps = mappings_in(r.base(), r.bytes());
  // Reserved, not committed: one mapping without access rights. (It may reach beyond the range
  // when the kernel merged it with an equal neighbour; it still counts once.)
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].perms, "---p");
  EXPECT_LE(maps[0].start, reinterpret_cast<uintptr_t>(r.base()));
  EXPECT_GE(maps[0].end, reinterpret_cast<uintptr_t>(r.base() + r.bytes()));
}

// Where the kernel's THP mode is `always`, a read-write range may get a 2 MiB page at the first
// touch of any of its 4 KiB pages (os_memory.cpp: 64 MiB of RSS for 32 touched pages). Every
// range the library maps asks for none: its VmFlags carry `nh`. (This machine runs THP in
// `madvise` mode; the flag is what decides under `always`.) That includes the class-data
// archive's: its file mapped over a reservation, fresh memory over it (lazy relocation), a
// read-only view of the file (the relocation's source), the builder's buffers (map_read_write).
TEST(OsMemory, EveryMappingAsksForNoTransparentHugePages) {
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
    GTEST_SKIP() << "kernel without transparent huge pages";
  }
  ReservedRange r(8 * MiB, 2 * MiB);
  ASSERT_NE(r.base(), nullptr);
  ASSERT_EQ(os::commit(r.base(), 4 * MiB), MS_OK);
  r.base()[0] = 1;
  for (char* p : {r.base(), r.base() + 4 * MiB, r.base() + 8 * MiB - 1}) {
    std::string flags = proc_memory::vm_flags_at(p);
    ASSERT_FALSE(flags.empty()) << "no mapping at " << static_cast<void*>(p);
    EXPECT_NE((" " + flags + " ").find(" nh "), std::string::npos) << flags;
  }
  char* rw = nullptr;
  ASSERT_EQ(os::map_read_write(os::page_size(), &rw), MS_OK);
  EXPECT_NE((" " + proc_memory::vm_flags_at(rw) + " ").find(" nh "), std::string::npos)
      << proc_memory::vm_flags_at(rw);
  ASSERT_EQ(os::release(rw, os::page_size()), MS_OK);

  auto no_huge_pages = [](const void* p) {
    std::string flags = proc_memory::vm_flags_at(p);
    return (" " + flags + " ").find(" nh ") != std::string::npos
               ? ::testing::AssertionSuccess()
               : ::testing::AssertionFailure() << "VmFlags at " << p << ": " << flags;
  };
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  int fd = fileno(file);
  std::vector<char> bytes(2 * MiB, 'a');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ReservedRange archive(4 * MiB, 2 * MiB);  // the archive's range is a reservation first
  ASSERT_EQ(os::map_file_over(archive.base(), 2 * MiB, fd, 0), MS_OK) << ms_last_error_text();
  EXPECT_EQ(archive.base()[2 * MiB - 1], 'a');
  EXPECT_TRUE(no_huge_pages(archive.base()));
  ASSERT_EQ(os::map_anonymous_over(archive.base() + MiB, MiB), MS_OK) << ms_last_error_text();
  EXPECT_EQ(archive.base()[MiB], 0) << "fresh memory";
  EXPECT_TRUE(no_huge_pages(archive.base() + MiB));
  EXPECT_TRUE(os::populate_for_write(archive.base() + MiB, MiB) || errno == EINVAL)
      << "a kernel that knows MADV_POPULATE_WRITE populates the range";
  const char* view = nullptr;
  ASSERT_EQ(os::map_file_read_only(MiB, fd, MiB, &view), MS_OK) << ms_last_error_text();
  EXPECT_EQ(view[0], 'a');
  EXPECT_TRUE(no_huge_pages(view));
  ASSERT_EQ(os::release(const_cast<char*>(view), MiB), MS_OK);
  std::fclose(file);
}

// The archive's mappings go through the fault seam like every other (kReserve) and leave
// nothing mapped when refused.
TEST(OsMemory, ArchiveMappingsMeetTheFaultSeam) {
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  int fd = fileno(file);
  std::vector<char> bytes(os::page_size(), 'a');
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ReservedRange r(MiB, MiB);
  {
    FaultGuard fault(os::FaultPoint::kReserve, 1);
    EXPECT_EQ(os::map_file_over(r.base(), os::page_size(), fd, 0), MS_ERR_RESERVE_FAILED);
  }
  {
    FaultGuard fault(os::FaultPoint::kReserve, 1);
    EXPECT_EQ(os::map_anonymous_over(r.base(), os::page_size()), MS_ERR_RESERVE_FAILED);
  }
  EXPECT_EQ(mappings_in(r.base(), r.bytes()).size(), 1u) << "the reservation as it was";
  {
    FaultGuard fault(os::FaultPoint::kReserve, 1);
    const char* view = reinterpret_cast<const char*>(1);
    EXPECT_EQ(os::map_file_read_only(os::page_size(), fd, 0, &view), MS_ERR_RESERVE_FAILED);
    EXPECT_EQ(view, nullptr);
  }
  std::fclose(file);
}

TEST(OsMemory, ReserveRefusesBadArguments) {
  char* p = reinterpret_cast<char*>(1);
  EXPECT_EQ(os::reserve(0, os::page_size(), 0, &p), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(os::reserve(os::page_size() + 1, os::page_size(), 0, &p), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(os::reserve(MiB, 3 * os::page_size(), 0, &p), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(os::reserve(MiB, os::page_size() / 2, 0, &p), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
}

TEST(OsMemory, CommitMakesTheRangeWritable) {
  ReservedRange r(4 * MiB, 4 * MiB);
  char* mid = r.base() + MiB;
  ASSERT_EQ(os::commit(mid, MiB), MS_OK) << ms_last_error_text();
  std::memset(mid, 0x5a, MiB);
  EXPECT_EQ(mid[MiB - 1], 0x5a);
  // Committing the middle splits the reservation at the edges of the committed run.
  auto maps = mappings_in(r.base(), r.bytes());
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[0].perms, "---p");
  EXPECT_EQ(maps[1].perms, "rw-p");
  EXPECT_EQ(maps[1].start, reinterpret_cast<uintptr_t>(mid));
  EXPECT_EQ(maps[1].end, reinterpret_cast<uintptr_t>(mid + MiB));
  EXPECT_EQ(maps[2].perms, "---p");
}

// Touch 64 MiB, uncommit it with madvise: RSS falls by most of it, the range stays one read-write
// mapping (reserved, readable as zeros), before and after: 1 mapping, 1 mapping.
TEST(OsMemory, UncommitDropsRssAndKeepsOneMapping) {
  const size_t bytes = 64 * MiB;
  ReservedRange r(bytes, 4 * MiB);
  ASSERT_EQ(os::commit(r.base(), bytes), MS_OK) << ms_last_error_text();
  size_t rss_untouched = proc_memory::resident_bytes();
  std::memset(r.base(), 1, bytes);
  size_t rss_touched = proc_memory::resident_bytes();
  EXPECT_GE(rss_touched, rss_untouched + bytes * 9 / 10);
  ASSERT_EQ(mappings_in(r.base(), bytes).size(), 1u);

  // Every other 16 KiB granule first: the worst pattern for the mapping count.
  for (size_t off = 0; off < bytes; off += 32 * KiB) {
    ASSERT_EQ(os::uncommit(r.base() + off, 16 * KiB, os::Uncommitted::kReadsZeros), MS_OK);
  }
  EXPECT_EQ(mappings_in(r.base(), bytes).size(), 1u);
  ASSERT_EQ(os::uncommit(r.base(), bytes, os::Uncommitted::kReadsZeros), MS_OK) << ms_last_error_text();
  size_t rss_after = proc_memory::resident_bytes();
  std::printf("[ os ] RSS %zu KiB -> touched %zu KiB -> uncommitted %zu KiB\n",
              rss_untouched / KiB, rss_touched / KiB, rss_after / KiB);
  EXPECT_GE(rss_touched - rss_after, bytes * 8 / 10);

  auto maps = mappings_in(r.base(), bytes);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].perms, "rw-p");
  EXPECT_EQ(r.base()[bytes / 2], 0) << "uncommitted memory reads as zeros";
}

// The alternative madvise avoids: protecting each uncommitted granule gives the kernel one
// mapping per protection change. 1 MiB in 16 KiB granules, every other one protected: 64.
TEST(OsMemory, ProtectingUncommitSplitsOneMappingPerGranule) {
  ReservedRange r(MiB, MiB);
  ASSERT_EQ(os::commit(r.base(), MiB), MS_OK);
  for (size_t off = 0; off < MiB; off += 32 * KiB) {
    ASSERT_EQ(os::uncommit(r.base() + off, 16 * KiB, os::Uncommitted::kFaults), MS_OK);
  }
  auto maps = mappings_in(r.base(), MiB);
  EXPECT_EQ(maps.size(), 64u);
  EXPECT_EQ(maps[0].perms, "---p");
  EXPECT_EQ(maps[1].perms, "rw-p");
}

TEST(OsMemory, ReserveAtAWishedAddress) {
  uintptr_t wish;
  {
    ReservedRange probe(8 * MiB, 4 * MiB);
    wish = reinterpret_cast<uintptr_t>(probe.base());
  }
  char* p = nullptr;
  ASSERT_EQ(os::reserve(8 * MiB, 4 * MiB, wish, &p), MS_OK) << ms_last_error_text();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p), wish);
  os::release(p, 8 * MiB);
}

// The wished range overlaps a live reservation in its lower half: the call must fail and map
// nothing in the free upper half (MAP_FIXED_NOREPLACE, and no fallback to another address).
TEST(OsMemory, ReserveAtATakenAddressFailsCleanly) {
  char* base = nullptr;
  ASSERT_EQ(os::reserve(16 * MiB, 4 * MiB, 0, &base), MS_OK);
  os::release(base + 8 * MiB, 8 * MiB);
  char* hole = base + 8 * MiB;
  ASSERT_TRUE(mappings_in(hole, 8 * MiB).empty()) << "the test's hole was taken by someone";
  size_t total_before = proc_memory::mapping_count();

  char* p = reinterpret_cast<char*>(1);
  EXPECT_EQ(os::reserve(8 * MiB, 4 * MiB, reinterpret_cast<uintptr_t>(base + 4 * MiB), &p),
            MS_ERR_RESERVE_FAILED);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
  EXPECT_TRUE(mappings_in(hole, 8 * MiB).empty());
  EXPECT_EQ(proc_memory::mapping_count(), total_before);
  os::release(base, 8 * MiB);
}

TEST(OsMemory, ReserveAtAMisalignedWishIsInvalid) {
  char* p = nullptr;
  EXPECT_EQ(os::reserve(4 * MiB, 4 * MiB, 4 * MiB + os::page_size(), &p),
            MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
}

TEST(OsMemory, InjectedReserveFailureIsAnError) {
  FaultGuard fault(os::FaultPoint::kReserve, 1);
  char* p = reinterpret_cast<char*>(1);
  EXPECT_EQ(os::reserve(4 * MiB, 4 * MiB, 0, &p), MS_ERR_RESERVE_FAILED);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::strstr(ms_last_error_text(), "injected"), nullptr) << ms_last_error_text();
  // One-shot: the next reserve works again.
  ReservedRange r(4 * MiB, 4 * MiB);
  EXPECT_NE(r.base(), nullptr);
}

TEST(OsMemory, InjectedCommitFailureLeavesTheRangeInaccessible) {
  ReservedRange r(MiB, MiB);
  FaultGuard fault(os::FaultPoint::kCommit, 2);
  ASSERT_EQ(os::commit(r.base(), 64 * KiB), MS_OK);
  EXPECT_EQ(os::commit(r.base() + 64 * KiB, 64 * KiB), MS_ERR_COMMIT_FAILED);
  EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED);
  auto maps = mappings_in(r.base() + 64 * KiB, 64 * KiB);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].perms, "---p");
}

}  // namespace
}  // namespace metaspace
