// The /proc reader shared by the tests, the lab and the benchmarks: each figure moves the way
// the kernel says it must when this process maps, touches and gives back memory.
#include "proc_memory.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

namespace {

constexpr size_t kBytes = 8u << 20;

struct Mapped {
  Mapped(int prot) {
    p = static_cast<char*>(mmap(nullptr, kBytes, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(p, MAP_FAILED);
  }
  ~Mapped() { munmap(p, kBytes); }
  char* p;
};

TEST(ProcMemory, ResidentAndProportionalSizesFollowTouchedPages) {
  Mapped m(PROT_READ | PROT_WRITE);
  size_t rss_before = proc_memory::resident_bytes();
  std::optional<size_t> pss_before = proc_memory::proportional_bytes();
  ASSERT_GT(rss_before, 0u) << "/proc/self/statm unreadable";
  std::memset(m.p, 1, kBytes);
  size_t rss_touched = proc_memory::resident_bytes();
  EXPECT_GE(rss_touched, rss_before + kBytes * 9 / 10);
  EXPECT_GE(proc_memory::peak_resident_bytes(), rss_touched);
  if (pss_before.has_value()) {  // smaps_rollup: Linux 4.14 and later
    // Private anonymous pages count whole in the PSS. Not compared with the PSS before: the
    // share of library pages in it falls when other processes (parallel tests) map them too.
    EXPECT_GE(proc_memory::proportional_bytes().value_or(0), kBytes * 9 / 10);
  }
  ASSERT_EQ(madvise(m.p, kBytes, MADV_DONTNEED), 0);
  EXPECT_LE(proc_memory::resident_bytes(), rss_touched - kBytes * 9 / 10);
}

// The count and the list agree. Reading the list allocates, and a sanitizer's heap may map a new
// region for it, so they are read until two rounds see the same process (at most three).
bool count_agrees_with_list() {
  for (int round = 0; round < 3; round++) {
    size_t listed = proc_memory::mappings().size();
    if (proc_memory::mapping_count() == listed) return true;
  }
  return false;
}

TEST(ProcMemory, MappingsAreFoundAndCounted) {
  EXPECT_TRUE(count_agrees_with_list());
  {
    Mapped m(PROT_NONE);
    std::vector<proc_memory::Mapping> maps = proc_memory::mappings_in(m.p, kBytes);
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].perms, "---p");
    EXPECT_LE(maps[0].start, reinterpret_cast<uintptr_t>(m.p));
    EXPECT_GE(maps[0].end, reinterpret_cast<uintptr_t>(m.p) + kBytes);
    // A read-write hole in the middle splits the mapping in three.
    ASSERT_EQ(mprotect(m.p + kBytes / 2, 4096, PROT_READ | PROT_WRITE), 0);
    EXPECT_EQ(proc_memory::mappings_in(m.p, kBytes).size(), 3u);
    EXPECT_TRUE(count_agrees_with_list());
  }
  EXPECT_TRUE(proc_memory::mappings_in(nullptr, 4096).empty());
}

}  // namespace
