// The kernel refuses to give memory back: madvise (uncommit), mprotect PROT_NONE (checked mode's
// protection of dead memory) or munmap (an empty node). Whatever could not be given back stays
// counted as committed (or reserved), ms_verify passes, the accounting identity holds, and the
// next ms_purge tries again.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>

#include "os/fault_injection.hpp"

namespace {

using metaspace::os::FaultPoint;
using metaspace::os::inject_fault;

constexpr size_t KiB = 1024;

struct FaultGuard {
  FaultGuard(FaultPoint p, uint64_t nth) : point(p) { inject_fault(p, nth); }
  ~FaultGuard() { inject_fault(point, 0); }
  FaultPoint point;
};

ms_stats_t stats_of(ms_metaspace_t* ms) {
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), MS_OK);
  return st;
}

// Committed memory outside the library's own bookkeeping (which stays while the metaspace lives).
size_t chunk_memory_committed(const ms_stats_t& st) {
  return st.total.committed_bytes - st.total.overhead_bytes;
}

bool fault_injection_compiled_in() {
  FaultGuard g(FaultPoint::kReserve, 1);
  ms_metaspace_t* ms = ms_create(nullptr);
  if (ms == nullptr) return true;
  ms_destroy(ms);
  return false;
}

// Two buddies of 128 KiB, 112 KiB committed each, merge into one free root
// chunk with two committed runs. The purge's second madvise fails: the first run is given back,
// the second stays. The chunk used to keep claiming both (ms_verify: "claims 114688 committed
// bytes the mask does not have"), and a new loader then used memory nobody had charged.
TEST(KernelRefusals, FailedMadviseInPurgeKeepsTheAccounting) {
  if (!fault_injection_compiled_in()) GTEST_SKIP() << "no fault injection";
  ms_settings_t s;
  ms_settings_init(&s);
  s.root_chunk_bytes = 256 * KiB;
  s.commit_granule_bytes = 16 * KiB;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* a = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_loader_t* b = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(a, MS_SPACE_NONCLASS, 100 * KiB), nullptr);
  ASSERT_NE(ms_allocate(b, MS_SPACE_NONCLASS, 100 * KiB), nullptr);
  ASSERT_EQ(ms_loader_destroy(a), MS_OK);
  ASSERT_EQ(ms_loader_destroy(b), MS_OK);
  size_t committed = stats_of(ms).total.committed_bytes;
  {
    FaultGuard g(FaultPoint::kUncommit, 2);
    ms_purge(ms);
  }
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  size_t kept = stats_of(ms).total.committed_bytes;
  EXPECT_GT(kept, 0u) << "the refused run stays committed";
  EXPECT_LT(kept, committed) << "the run before it was given back";

  // A new loader takes the chunk: everything it uses is committed and charged.
  ms_loader_t* c = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  char* p = static_cast<char*>(ms_allocate(c, MS_SPACE_NONCLASS, 250 * KiB));
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  std::memset(p, 0x11, 250 * KiB);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st = stats_of(ms);
  EXPECT_GE(st.total.committed_bytes, st.total.used_bytes);
  EXPECT_GE(st.total.committed_bytes, 250 * KiB);

  // The next purge gives everything back.
  ASSERT_EQ(ms_loader_destroy(c), MS_OK);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  EXPECT_EQ(chunk_memory_committed(stats_of(ms)), 0u);
  ms_destroy(ms);
}

// Checked mode protects dead memory at once; when mprotect fails the memory is gone already
// (madvise succeeded) but stays counted as committed until a purge uncommits it properly.
TEST(KernelRefusals, FailedProtectKeepsTheMemoryCountedUntilThePurge) {
  if (!fault_injection_compiled_in()) GTEST_SKIP() << "no fault injection";
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = 1;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 256 * KiB), nullptr);
  {
    FaultGuard g(FaultPoint::kProtect, 1);
    EXPECT_EQ(ms_loader_destroy(l), MS_OK) << "the loader dies all the same";
  }
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  EXPECT_GT(chunk_memory_committed(stats_of(ms)), 0u);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  EXPECT_EQ(chunk_memory_committed(stats_of(ms)), 0u);
  ms_destroy(ms);
}

// An empty node whose munmap fails stays, empty and reserved; the next purge unmaps it.
TEST(KernelRefusals, FailedUnmapKeepsTheNodeForTheNextPurge) {
  if (!fault_injection_compiled_in()) GTEST_SKIP() << "no fault injection";
  ms_settings_t s;
  ms_settings_init(&s);
  s.root_chunk_bytes = 256 * KiB;
  s.node_bytes = 256 * KiB;  // one root chunk per node
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  for (int i = 0; i < 3; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 200 * KiB), nullptr);
  EXPECT_EQ(stats_of(ms).space[MS_SPACE_NONCLASS].nodes, 3u);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  {
    // The second node's unmap: each node removed makes two release calls, its range and then its
    // own bookkeeping range (commit mask, chunk start table).
    FaultGuard g(FaultPoint::kRelease, 3);
    ms_purge(ms);
  }
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st = stats_of(ms);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].nodes, 1u) << "the refused node stays";
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].reserved_bytes, 256 * KiB);
  EXPECT_EQ(chunk_memory_committed(st), 0u);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  EXPECT_EQ(stats_of(ms).space[MS_SPACE_NONCLASS].nodes, 0u);
  // And the space works on.
  l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr) << ms_last_error_text();
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

}  // namespace
