#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdint>
#include <vector>

#include "backends/malloc_backend.hpp"
#include "simulated_loader.hpp"

namespace lab {
namespace {

// Under AddressSanitizer malloc is ASan's, and glibc's statistics say nothing about it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

TEST(MallocBackend, LoaderDeathFreesEveryBlock) {
  if (!kGlibcMalloc) GTEST_SKIP() << "malloc is not glibc's in a sanitized build";
  MallocBackend backend("malloc", false, 0);
  const std::size_t in_use_before = mallinfo2().uordblks;
  WorkloadParams params;
  params.dealloc_fraction = 0.05;  // exercise unlinking too
  Workload workload(params);
  ClassShape shape;
  {
    std::vector<SimulatedLoader> loaders;
    for (int i = 0; i < 8; ++i) loaders.emplace_back(backend, LoaderKind::standard);
    for (int c = 0; c < 600; ++c)
      for (auto& l : loaders) {
        workload.next_class(shape);
        l.load(shape);
      }
    std::size_t live = 0;
    for (auto& l : loaders) live += l.live_bytes();
    EXPECT_EQ(backend.figures().used, live);
    EXPECT_GT(mallinfo2().uordblks, in_use_before + live);  // headers on top of the payload
    ASSERT_GT(live, 8u * 1024 * 1024);
    for (auto& l : loaders) l.release();
    EXPECT_EQ(backend.figures().used, 0u);
  }
  // Everything the loaders allocated went back to malloc. glibc counts the chunks parked in its
  // per-thread cache (at most 7 per size class up to 1 KiB, < 256 KiB) as in use, hence the slack;
  // the loaders held far more than that.
  EXPECT_LE(mallinfo2().uordblks, in_use_before + 256 * 1024);
}

TEST(MallocBackend, ClassBlocksHonourTheClassAlignment) {
  MallocBackend backend("malloc", false, 1024);
  LoaderHandle l = backend.create_loader(LoaderKind::standard);
  for (int i = 0; i < 100; ++i) {
    void* p = backend.allocate(l, Space::klass, 572);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 1024, 0u);
  }
  backend.destroy_loader(l);
  EXPECT_EQ(backend.figures().used, 0u);
}

TEST(MallocBackend, PrematureFreeLowersUsed) {
  MallocBackend backend("malloc", false, 0);
  LoaderHandle l = backend.create_loader(LoaderKind::standard);
  void* a = backend.allocate(l, Space::nonclass, 100);
  backend.allocate(l, Space::nonclass, 40);
  EXPECT_EQ(backend.figures().used, 140u);
  backend.deallocate(l, a, 100);
  EXPECT_EQ(backend.figures().used, 40u);
  backend.destroy_loader(l);
}

}  // namespace
}  // namespace lab
