// The archive's ranges are mapped through the os layer like every other: advised
// MADV_NOHUGEPAGE (the builder's buffers, the mapped file, lazily relocated regions), and
// refused by the fault seam, which ms_create then reports cleanly.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <memory>
#include <set>
#include <string>

#include "os/fault_injection.hpp"
#include "proc_memory.hpp"
#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

::testing::AssertionResult no_huge_pages(const void* p) {
  std::string flags = proc_memory::vm_flags_at(p);
  if (flags.empty()) return ::testing::AssertionFailure() << "no mapping at " << p;
  if ((" " + flags + " ").find(" nh ") != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "VmFlags at " << p << ": " << flags;
}

bool kernel_has_thp() {
  return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

TEST(ArchiveOsMappings, TheBuildersBuffersAndTheMappedArchiveAskForNoHugePages) {
  if (!kernel_has_thp()) GTEST_SKIP() << "kernel without transparent huge pages";
  ms_settings_t s = archive_settings();
  uintptr_t base = free_address(256u << 20);
  ms_archive_builder_t* b = ms_archive_begin(&s, base);
  ASSERT_NE(b, nullptr) << ms_last_error_text();
  void* k = ms_archive_allocate(b, MS_SPACE_CLASS, 576);
  void* m = ms_archive_allocate(b, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(no_huge_pages(k));
  EXPECT_TRUE(no_huge_pages(m));
  ms_archive_discard(b);

  TempDir dir;
  MappedGraph g = dump_and_map(dir, s, 50, 3);
  ASSERT_NE(g.ms, nullptr) << ms_last_error_text();
  void* last = ms_archive_root(g.ms, "last");
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(no_huge_pages(last));
  ms_destroy(g.ms);
}

TEST(ArchiveOsMappings, LazilyRelocatedRegionsAskForNoHugePages) {
  if (!kernel_has_thp()) GTEST_SKIP() << "kernel without transparent huge pages";
  ms_settings_t s = archive_settings();
  s.archive_verify = 0;
  s.archive_relocation = MS_ARCHIVE_RELOCATE_LAZY;
  TempDir dir;
  std::string path = dir.file("a.msa");
  uintptr_t base = free_address(256u << 20);
  write_graph(path, s, base, 200, 3);
  BaseSquatter squatter(base);
  ASSERT_TRUE(squatter.holds(base));
  s.archive_path = path.c_str();
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  ASSERT_EQ(st.archive.relocated, 1);
  if (st.archive.relocation != MS_ARCHIVE_RELOCATE_LAZY) {
    ms_destroy(ms);
    GTEST_SKIP() << "relocated eagerly here: " << st.archive.relocation_reason;
  }
  void* last = ms_archive_root(ms, "last");
  ASSERT_NE(last, nullptr);
  EXPECT_TRUE(no_huge_pages(last));
  ms_destroy(ms);
}

// Each of ms_create's mappings refused in turn: the archive's among them, reported as the
// archive's (MS_ERR_ARCHIVE_IO) since the policy requires it; nothing else but a refusal, and
// the next ms_create maps the archive.
TEST(ArchiveOsMappings, EveryMappingOfACreateWithAnArchiveMeetsTheFaultSeam) {
  ms_settings_t s = archive_settings();
  TempDir dir;
  std::string path = dir.file("a.msa");
  write_graph(path, s, free_address(256u << 20), 20, 2);
  s.archive_path = path.c_str();
  uint64_t before = os::fault_point_calls(os::FaultPoint::kReserve);
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  uint64_t calls = os::fault_point_calls(os::FaultPoint::kReserve) - before;
  ms_destroy(ms);
  ASSERT_GT(calls, 0u);
  std::set<ms_error_t> errors;
  for (uint64_t nth = 1; nth <= calls; nth++) {
    os::inject_fault(os::FaultPoint::kReserve, nth);
    ms = ms_create(&s);
    os::inject_fault(os::FaultPoint::kReserve, 0);
    if (ms != nullptr) {
      EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
      ms_destroy(ms);
      continue;
    }
    errors.insert(ms_last_error());
    EXPECT_TRUE(ms_last_error() == MS_ERR_RESERVE_FAILED || ms_last_error() == MS_ERR_ARCHIVE_IO)
        << "mapping " << nth << " of " << calls << ": " << ms_last_error_text();
    ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << "after mapping " << nth << " was refused: " << ms_last_error_text();
    ms_destroy(ms);
  }
  EXPECT_EQ(errors.count(MS_ERR_ARCHIVE_IO), 1u) << "the archive's own mapping met the seam";
}

}  // namespace
}  // namespace metaspace::test
