// Two processes mapping the same archive share its pages: each one's proportional set size (PSS)
// for the file's mapping is about half of its resident set size (RSS) for it, as the kernel
// divides a page shared by two processes between them.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

TEST(ArchiveSharing, TwoProcessesShareTheArchivesPages) {
  TempDir dir;
  std::string path = dir.file("shared.msa");
  ms_settings_t s = archive_settings();
  uintptr_t base = free_address(256u << 20);
  write_graph(path, s, base, 2000, 4);  // about 3 MiB of metadata
  s.archive_path = path.c_str();
  int to_parent[2], to_child[2];
  ASSERT_EQ(pipe(to_parent), 0);
  ASSERT_EQ(pipe(to_child), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  // Both: map, read every page (as a runtime reading its classes; the checks at ms_create read
  // the file with pread, not through the mapping), tell the other, wait for it, measure.
  ms_metaspace_t* ms = ms_create(&s);
  if (ms != nullptr) {
    ms_stats_t mapped;
    if (ms_get_stats(ms, &mapped) == MS_OK) {
      unsigned sum = 0;
      for (size_t at = 0; at < mapped.archive.file_bytes; at += 4096) {
        sum += *reinterpret_cast<const volatile unsigned char*>(mapped.archive.base + at);
      }
      (void)sum;
    }
  }
  char c = ms != nullptr ? 'y' : 'n';
  int tell = child == 0 ? to_parent[1] : to_child[1];
  int hear = child == 0 ? to_child[0] : to_parent[0];
  ssize_t w = write(tell, &c, 1);
  char other = 'n';
  ssize_t r = read(hear, &other, 1);
  FileMemory mine = file_memory(path);
  if (child == 0) {
    ssize_t w2 = write(to_parent[1], &mine, sizeof mine);
    char done;
    ssize_t r2 = read(to_child[0], &done, 1);  // stay mapped until the parent measured
    _exit(ms != nullptr && w == 1 && r == 1 && w2 == sizeof mine && r2 == 1 ? 0 : 1);
  }
  FileMemory theirs;
  ASSERT_EQ(read(to_parent[0], &theirs, sizeof theirs), ssize_t(sizeof theirs));
  ASSERT_EQ(write(to_child[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ASSERT_EQ(other, 'y');
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  ASSERT_EQ(st.archive.relocated, 0);
  for (const FileMemory& m : {mine, theirs}) {
    // Every page was read by both: RSS about the file, PSS about half of it (loosely: a page the
    // kernel read ahead or one process touched alone shifts it a little).
    EXPECT_GE(m.rss_kib * 1024, st.archive.file_bytes * 9 / 10);
    EXPECT_GT(m.pss_kib * 100, m.rss_kib * 35) << "rss " << m.rss_kib << " pss " << m.pss_kib;
    EXPECT_LT(m.pss_kib * 100, m.rss_kib * 65) << "rss " << m.rss_kib << " pss " << m.pss_kib;
  }
  std::printf("archive of %zu KiB: RSS %zu / %zu KiB, PSS %zu / %zu KiB (parent / child)\n",
              st.archive.file_bytes / 1024, mine.rss_kib, theirs.rss_kib, mine.pss_kib,
              theirs.pss_kib);
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
