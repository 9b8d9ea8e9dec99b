// Dump and map: pointer graphs at the requested base and relocated, narrow class pointers across
// the archive and the class space at every shift, deallocation of archived blocks ignored.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

TEST(ArchiveRoundTrip, MappedAtItsBaseNothingMoves) {
  TempDir dir;
  MappedGraph g = dump_and_map(dir, archive_settings(), 300, 4);
  ms_metaspace_t* ms = g.ms;
  uintptr_t base = g.base;
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_EQ(st.archive.mapped, 1);
  EXPECT_EQ(st.archive.relocated, 0);
  EXPECT_EQ(st.archive.base, base);
  EXPECT_EQ(st.archive.relocation_delta, 0);
  EXPECT_EQ(st.archive.pointers, 300u * 2 + 300u * 4 * 2 - 1 - 300);  // super of the first and
                                                                      // next of each last method are NULL
  EXPECT_EQ(st.archive.narrow_pointers, 300u * 5);
  EXPECT_EQ(st.archive.roots, 2u);
  // The class space starts right above the archive's range; narrow pointers start at the archive.
  EXPECT_EQ(ms_class_space_base(ms), base);
  check_graph(ms, 300, 4);
  const char* reason = nullptr;
  EXPECT_EQ(ms_archive_status(ms, &reason), MS_OK);
  ms_destroy(ms);
}

TEST(ArchiveRoundTrip, BaseTakenRelocatesEveryMarkedPointer) {
  TempDir dir;
  std::string path = dir.file("a.msa");
  ms_settings_t s = archive_settings();
  uintptr_t base = free_address(256u << 20);
  write_graph(path, s, base, 300, 4);
  BaseSquatter squatter(base);
  ASSERT_TRUE(squatter.holds(base));
  s.archive_path = path.c_str();
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_EQ(st.archive.relocated, 1);
  EXPECT_NE(st.archive.base, base);
  EXPECT_EQ(st.archive.requested_base, base);
  EXPECT_EQ(static_cast<uintptr_t>(st.archive.relocation_delta), st.archive.base - base);
  check_graph(ms, 300, 4);
  ms_destroy(ms);
}

TEST(ArchiveRoundTrip, NarrowPointersCoverArchiveAndClassSpaceAtEveryShift) {
  TempDir dir;
  for (unsigned shift = 3; shift <= 10; shift++) {
    SCOPED_TRACE(shift);
    std::string path = dir.file(("s" + std::to_string(shift)).c_str());
    ms_settings_t s = archive_settings(size_t{1} << shift);
    write_graph(path, s, free_address(256u << 20), 50, 1);
    s.archive_path = path.c_str();
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ASSERT_EQ(ms_class_shift(ms), shift);
    EXPECT_LE(ms_narrow_class_bits(ms), 32u);
    check_graph(ms, 50, 1);
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    for (int i = 0; i < 100; i++) {
      void* k = ms_allocate(l, MS_SPACE_CLASS, 600);
      ASSERT_NE(k, nullptr);
      ASSERT_FALSE(ms_is_archived(ms, k));
      uint32_t n = ms_encode_class(ms, k);
      ASSERT_EQ(ms_decode_class(ms, n), k);
      // New classes lie above every archived one.
      auto* last = static_cast<ArchivedKlass*>(ms_archive_root(ms, "last"));
      ASSERT_GT(n, last->narrow_self);
    }
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

TEST(ArchiveRoundTrip, DeallocatingArchivedBlocksIsIgnoredAndCounted) {
  for (int checked = 0; checked <= 1; checked++) {
    SCOPED_TRACE(checked);
    TempDir dir;
    ms_settings_t s = archive_settings();
    s.checked = checked;
    ms_metaspace_t* ms = dump_and_map(dir, s, 10, 2).ms;
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    auto* k = static_cast<ArchivedKlass*>(ms_archive_root(ms, "last"));
    EXPECT_EQ(ms_deallocate(l, k, 576), MS_OK);
    EXPECT_EQ(ms_deallocate(l, k->methods, 88), MS_OK);
    EXPECT_EQ(ms_deallocate(l, k->methods, 88), MS_OK);  // again: still not a double free
    ms_stats_t st;
    ASSERT_MS_OK(ms_get_stats(ms, &st));
    EXPECT_EQ(st.archive.deallocations_ignored, 3u);
    EXPECT_EQ(st.total.deallocated_bytes, 0u);
    // The block is intact and the loader's own blocks still free as usual.
    EXPECT_EQ(k->methods->holder, k);
    void* own = ms_allocate(l, MS_SPACE_NONCLASS, 64);
    EXPECT_EQ(ms_deallocate(l, own, 64), MS_OK);
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

TEST(ArchiveRoundTrip, ExplicitClassSpaceBasePlacesTheArchiveBelowIt) {
  TempDir dir;
  std::string path = dir.file("a.msa");
  ms_settings_t s = archive_settings();
  uintptr_t base = free_address(512u << 20);
  write_graph(path, s, base, 20, 1);
  s.archive_path = path.c_str();
  s.class_space_base = base + (128u << 20);  // the archive goes right below, relocated
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_EQ(st.archive.base + st.archive.reserved_bytes, s.class_space_base);
  EXPECT_EQ(st.archive.relocated, 1);
  check_graph(ms, 20, 1);
  ms_destroy(ms);
}

// archive_verify = 0 leaves the regions unread: damage there is not found (and costs nothing at
// start-up), while damage in the header, bitmaps or roots still is. (Whether pages are read
// cannot be asserted from the page cache or RSS: the kernel's read-around brought 2.4 MiB of an
// 8 MiB file in for one touched page on the test machine.)
TEST(ArchiveRoundTrip, WithoutFullVerificationOnlyTheMetadataIsChecked) {
  TempDir dir;
  std::string path = dir.file("a.msa");
  ms_settings_t s = archive_settings();
  write_graph(path, s, free_address(256u << 20), 100, 2);
  std::vector<char> bytes = read_bytes(path);
  bytes[4096 + 576 * 50 + 100] ^= 1;  // padding inside a class block
  write_bytes(path, bytes);
  s.archive_path = path.c_str();
  s.archive_verify = 1;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_ARCHIVE_CHECKSUM);
  s.archive_verify = 0;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  check_graph(ms, 100, 2);
  ms_destroy(ms);
  bytes[bytes.size() - 1] ^= 1;  // the last root's offset
  write_bytes(path, bytes);
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_ARCHIVE_CHECKSUM);
}

}  // namespace
}  // namespace metaspace::test
