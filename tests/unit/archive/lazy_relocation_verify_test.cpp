// LazyRelocation::verify (archive/lazy_relocation.hpp) on a relocation started directly: two
// clusters of a file, each with one marked pointer, before and after its pages are filled.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "archive/lazy_relocation.hpp"
#include "unit/archive/archive_fixture.hpp"

namespace metaspace::test {
namespace {

using archive::LazyRelocation;
using archive::LazyRelocationRequest;

TEST(LazyRelocationVerify, PassesWhenStartedAndAfterEveryClusterIsFilled) {
  constexpr size_t kBytes = 2 * LazyRelocation::kClusterBytes;
  constexpr uint64_t kLow = 0x10000000, kHigh = 0x20000000;
  constexpr int64_t kDelta = 0x1000;
  std::vector<uint64_t> words(kBytes / 8, 7);
  std::vector<uint64_t> bits(kBytes / 8 / 64, 0);
  for (size_t cluster = 0; cluster < 2; cluster++) {
    size_t w = cluster * LazyRelocation::kClusterBytes / 8;
    words[w] = kLow + 64 * cluster;  // marked: moved by the delta
    bits[w / 64] |= uint64_t{1} << (w % 64);
  }
  TempDir dir;
  std::string path = dir.file("regions");
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, words.data(), kBytes), static_cast<ssize_t>(kBytes));
  void* range = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ASSERT_NE(range, MAP_FAILED);

  LazyRelocationRequest r;
  r.range = reinterpret_cast<uintptr_t>(range);
  r.bytes = kBytes;
  r.fd = fd;
  r.pointer_bits = bits.data();
  r.delta = kDelta;
  r.low = kLow;
  r.high = kHigh;
  std::string why_not;
  std::unique_ptr<LazyRelocation> lazy = LazyRelocation::start(r, &why_not);
  if (lazy == nullptr) {
    munmap(range, kBytes);
    close(fd);
    GTEST_SKIP() << "no lazy relocation here: " << why_not;
  }
  EXPECT_TRUE(lazy->verify()) << ms_last_error_text();
  EXPECT_EQ(lazy->clusters_filled(), 0u);
  // The first touch fills the first cluster, every marked word moved.
  const auto* mapped = static_cast<const volatile uint64_t*>(range);
  EXPECT_EQ(mapped[0], kLow + kDelta);
  EXPECT_EQ(mapped[1], 7u);
  EXPECT_TRUE(lazy->verify()) << ms_last_error_text();
  lazy->fill_all();
  EXPECT_GE(lazy->clusters_filled(), 2u);
  EXPECT_EQ(mapped[LazyRelocation::kClusterBytes / 8], kLow + 64 + kDelta);
  EXPECT_TRUE(lazy->verify()) << ms_last_error_text();
  lazy.reset();
  munmap(range, kBytes);
  close(fd);
}

}  // namespace
}  // namespace metaspace::test
