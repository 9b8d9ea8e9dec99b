// Lazy relocation under concurrent first touches: several threads walk the same relocated archive
// at once, so that faults on one cluster race (two messages for it: the second finds the pages
// there, EEXIST) and the handler serves them all. Run under TSan by the tsan preset.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/mman.h>

#include <atomic>
#include <thread>
#include <vector>

#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

TEST(ArchiveLazyRelocationConcurrency, ThreadsTouchingTheSameClustersAllSeeMovedPointers) {
  TempDir dir;
  const std::string path = dir.file("a.msa");
  ms_settings_t s = archive_settings();
  s.archive_verify = 0;
  s.archive_relocation = MS_ARCHIVE_RELOCATE_LAZY;
  const uintptr_t base = free_address(256u << 20);
  constexpr size_t kClasses = 3000, kMethods = 5;
  write_graph(path, s, base, kClasses, kMethods);
  BaseSquatter squatter(base);
  ASSERT_TRUE(squatter.holds(base));
  s.archive_path = path.c_str();
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  ASSERT_EQ(st.archive.relocation, MS_ARCHIVE_RELOCATE_LAZY) << st.archive.relocation_reason;

  std::atomic<int> start{0};
  std::atomic<size_t> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&] {
      start.fetch_add(1);
      while (start.load() < 4) {
      }
      size_t seen = 0;
      for (auto* k = static_cast<ArchivedKlass*>(ms_archive_root(ms, "last")); k != nullptr; k = k->super) {
        if (k->id != kClasses - 1 - seen) bad.fetch_add(1);
        for (ArchivedMethod* me = k->methods; me != nullptr; me = me->next)
          if (me->holder != k) bad.fetch_add(1);
        seen++;
      }
      if (seen != kClasses) bad.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0u);
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
