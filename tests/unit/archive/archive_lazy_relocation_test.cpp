// Lazy relocation (docs/archive.md, "Relocation"): a relocated archive whose pages are moved when
// first touched (userfaultfd, UFFD_USER_MODE_ONLY), the eager fallback when the kernel refuses,
// the setting, what a system call sees, fork, and nothing left behind at ms_destroy.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>

#include "archive/lazy_relocation.hpp"
#include "proc_memory.hpp"
#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

using archive::LazyRelocation;

size_t thread_count() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// The graph dumped at a free base, that base taken by a squatter, then mapped with `s`.
class RelocatedArchive : public testing::Test {
 protected:
  void map(ms_settings_t s, size_t classes = 300, size_t methods = 4) {
    path_ = dir_.file("a.msa");
    base_ = free_address(256u << 20);
    write_graph(path_, s, base_, classes, methods);
    squatter_ = std::make_unique<BaseSquatter>(base_);
    ASSERT_TRUE(squatter_->holds(base_));
    s.archive_path = path_.c_str();
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
    ASSERT_MS_OK(ms_verify(ms_));
    ASSERT_MS_OK(ms_get_stats(ms_, &stats_));
    ASSERT_EQ(stats_.archive.relocated, 1);
  }
  // Pages of the archive's range in memory (mincore): the header, bitmaps and roots from the page
  // cache, and the regions' pages a lazy relocation has filled.
  size_t resident() {
    ms_stats_t st;
    EXPECT_EQ(ms_get_stats(ms_, &st), MS_OK);
    return st.archive.resident_bytes;
  }
  void TearDown() override {
    if (ms_ != nullptr) ms_destroy(ms_);
    squatter_.reset();
    LazyRelocation::open_hook = nullptr;
  }
  static ms_settings_t lazy_settings(int relocation = MS_ARCHIVE_RELOCATE_LAZY) {
    ms_settings_t s = archive_settings();
    s.archive_verify = 0;
    s.archive_relocation = relocation;
    return s;
  }

  TempDir dir_;
  std::string path_;
  uintptr_t base_ = 0;
  std::unique_ptr<BaseSquatter> squatter_;
  ms_metaspace_t* ms_ = nullptr;
  ms_stats_t stats_{};
};

TEST_F(RelocatedArchive, LazyMovesEveryPointerOfAPageWhenItIsFirstTouched) {
  map(lazy_settings(), 2000, 6);
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_LAZY);
  ASSERT_NE(stats_.archive.relocation_reason, nullptr);
  EXPECT_NE(std::string(stats_.archive.relocation_reason).find("userfaultfd"), std::string::npos);
  // Ready with none of the regions filled: the roots are outside them, nothing else was read.
  const size_t region_bytes = stats_.archive.class_region_bytes + stats_.archive.nonclass_region_bytes;
  const size_t outside = (stats_.archive.file_bytes - region_bytes + 4095) / 4096 * 4096;  // header, bitmaps, roots
  const size_t before = resident();
  EXPECT_LE(before, outside);
  check_graph(ms_, 2000, 6);
  const size_t after = resident();
  EXPECT_GT(after, before);
  EXPECT_LE(after, outside + region_bytes);
  // A second walk fills nothing more.
  check_graph(ms_, 2000, 6);
  EXPECT_EQ(resident(), after);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_F(RelocatedArchive, AutoIsLazyWithoutVerificationAndEagerWithIt) {
  map(lazy_settings(MS_ARCHIVE_RELOCATE_AUTO));
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_LAZY);
  check_graph(ms_, 300, 4);
  ms_destroy(ms_);
  ms_ = nullptr;
  squatter_.reset();
  ms_settings_t s = archive_settings();  // archive_verify = 1, archive_relocation = auto
  map(s);
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_EAGER);
  EXPECT_NE(std::string(stats_.archive.relocation_reason).find("archive_verify=1"), std::string::npos);
  check_graph(ms_, 300, 4);
}

TEST_F(RelocatedArchive, LazyAfterFullVerificationStillMovesThePointers) {
  ms_settings_t s = lazy_settings();
  s.archive_verify = 1;
  map(s);
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_LAZY);
  check_graph(ms_, 300, 4);
}

TEST_F(RelocatedArchive, EagerWhenAskedFor) {
  map(lazy_settings(MS_ARCHIVE_RELOCATE_EAGER));
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_EAGER);
  EXPECT_STREQ(stats_.archive.relocation_reason, "archive_relocation=eager");
  check_graph(ms_, 300, 4);
}

TEST_F(RelocatedArchive, UserfaultfdRefusedFallsBackToEagerAndSaysWhy) {
  LazyRelocation::open_hook = [] {
    errno = EPERM;
    return -1;
  };
  map(lazy_settings());
  EXPECT_EQ(stats_.archive.relocation, MS_ARCHIVE_RELOCATE_EAGER);
  const std::string reason = stats_.archive.relocation_reason;
  EXPECT_NE(reason.find("userfaultfd"), std::string::npos) << reason;
  EXPECT_NE(reason.find(std::strerror(EPERM)), std::string::npos) << reason;
  check_graph(ms_, 300, 4);
  // The reports say which was used and why.
  char* text = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  ms_report_options_t o;
  ms_report_options_init(&o);
  ASSERT_MS_OK(ms_print_report(ms_, f, &o));
  std::fclose(f);
  const std::string report(text, len);
  std::free(text);
  EXPECT_NE(report.find("relocation: eager (eager, lazy refused: userfaultfd"), std::string::npos) << report;
}

// UFFD_USER_MODE_ONLY: the kernel does not wait for the handler on its own accesses, so a
// system call reading an untouched page gets EFAULT; touching it from user mode first fixes it
// (docs/archive.md says so).
TEST_F(RelocatedArchive, ASystemCallReadingAnUntouchedPageGetsEfaultUntilTouched) {
  map(lazy_settings(), 2000, 6);
  auto* first = static_cast<char*>(ms_archive_root(ms_, "first"));
  ASSERT_NE(first, nullptr);
  // The last page of the regions: nothing has touched it.
  char* untouched = reinterpret_cast<char*>(stats_.archive.base) + 4096 + stats_.archive.class_region_bytes +
                    stats_.archive.nonclass_region_bytes - 4096;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  errno = 0;
  EXPECT_EQ(write(fds[1], untouched, 64), -1);
  EXPECT_EQ(errno, EFAULT);
  volatile char touch = *untouched;  // pre-touch from user mode: the handler fills the cluster
  (void)touch;
  EXPECT_EQ(write(fds[1], untouched, 64), 64);
  close(fds[0]);
  close(fds[1]);
}

// A child forked without exec sees a filled archive (the fork handler fills every cluster):
// userfaultfd registrations are not inherited, untouched pages would read as zeros.
TEST_F(RelocatedArchive, AForkedChildSeesTheRelocatedArchive) {
  map(lazy_settings(), 500, 3);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    size_t seen = 0;
    for (auto* k = static_cast<ArchivedKlass*>(ms_archive_root(ms_, "last")); k != nullptr; k = k->super) {
      if (k->id != 499 - seen || !ms_is_archived(ms_, k)) _exit(1);
      for (ArchivedMethod* me = k->methods; me != nullptr; me = me->next)
        if (me->holder != k) _exit(2);
      seen++;
    }
    _exit(seen == 500 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  check_graph(ms_, 500, 3);
}

// A forked child that destroys the metaspace: the handler thread runs in the parent only. The
// child used to join it (a thread it does not have: it waited for ever) and to write the stop
// byte into the pipe it shares with the parent (which stopped the parent's handler). Now the
// child ends at once and the parent's handler still serves.
TEST_F(RelocatedArchive, AForkedChildDestroysTheMetaspaceWithoutStoppingTheParents) {
  map(lazy_settings(), 500, 3);
  const size_t threads_before = thread_count();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child that waits for ever ends with SIGALRM
    ms_destroy(ms_);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  // A stopped handler takes a moment to end: look for half a second.
  for (int i = 0; i < 50 && thread_count() == threads_before; i++) usleep(10000);
  EXPECT_EQ(thread_count(), threads_before) << "the parent's handler stopped";
  check_graph(ms_, 500, 3);
}

TEST_F(RelocatedArchive, DestroyStopsTheHandlerAndUnmapsEverything) {
  const size_t threads_before = thread_count();
  map(lazy_settings());
  EXPECT_EQ(thread_count(), threads_before + 1);
  check_graph(ms_, 300, 4);
  const uintptr_t base = stats_.archive.base;
  const size_t reserved = stats_.archive.reserved_bytes;
  ms_destroy(ms_);
  ms_ = nullptr;
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_TRUE(proc_memory::mappings_in(reinterpret_cast<void*>(base), reserved).empty());
  std::ifstream maps("/proc/self/maps");
  std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find(path_), std::string::npos) << "the source view of the file is unmapped";
}

TEST(ArchiveRelocationSetting, TextKeyAndRange) {
  ms_settings_t s;
  ms_settings_init(&s);
  EXPECT_EQ(s.archive_relocation, MS_ARCHIVE_RELOCATE_AUTO);
  ASSERT_MS_OK(ms_settings_parse(&s, "archive_relocation=lazy"));
  EXPECT_EQ(s.archive_relocation, MS_ARCHIVE_RELOCATE_LAZY);
  ASSERT_MS_OK(ms_settings_parse(&s, "archive_relocation=eager"));
  EXPECT_EQ(s.archive_relocation, MS_ARCHIVE_RELOCATE_EAGER);
  EXPECT_EQ(ms_settings_parse(&s, "archive_relocation=sometimes"), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ms_last_error_text()).find("archive_relocation"), std::string::npos);
  s.archive_relocation = 7;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace metaspace::test
