// In checked mode the memory of a destroyed loader is zapped with 0xD5 and, where it fills whole
// commit granules, uncommitted and protected at once (reclaim policies that merge; policy none
// keeps all memory committed, zapped): a runtime that still reads a dead loader's
// metadata faults (or, in a granule shared with a live loader's chunk, reads the pattern) and
// never sees the old data. Faults are caught in-process with a SIGSEGV handler and siglongjmp,
// which also works under AddressSanitizer (the memory is ours, its shadow is clean).
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <utility>
#include <vector>

#include "support/ms_assertions.hpp"
#include "unit/checked/checked_fixture.hpp"

namespace metaspace::test {
namespace {

sigjmp_buf g_probe;

void on_fault(int) { siglongjmp(g_probe, 1); }

// Reads the byte at p; false if that faults.
bool readable(const void* p, unsigned char* value) {
  struct sigaction sa {};
  struct sigaction old_segv {};
  struct sigaction old_bus {};
  sa.sa_handler = on_fault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  bool ok;
  if (sigsetjmp(g_probe, 1) == 0) {
    *value = *static_cast<const volatile unsigned char*>(p);
    ok = true;
  } else {
    ok = false;
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  sigaction(SIGBUS, &old_bus, nullptr);
  return ok;
}

using Blocks = std::vector<std::pair<char*, size_t>>;

void fill(ms_loader_t* l, Blocks* blocks, int classes) {
  for (int c = 0; c < classes; c++) {
    size_t sizes[] = {600, 48, 120, 312, 64, 1000, 24, 200};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      ms_space_t space = i == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
      char* p = static_cast<char*>(ms_allocate(l, space, sizes[i]));
      ASSERT_NE(p, nullptr) << last_error();
      std::memset(p, 0x5A, sizes[i]);
      blocks->push_back({p, sizes[i]});
    }
  }
}

// Counts the blocks whose first byte faults; every readable one must hold the dead pattern.
size_t count_faulting(const Blocks& blocks) {
  size_t faults = 0;
  for (auto [p, bytes] : blocks) {
    unsigned char v = 0;
    if (!readable(p, &v)) {
      faults++;
    } else {
      EXPECT_EQ(v, 0xD5) << "readable dead block " << ptr(p) << " (" << bytes << " bytes)";
    }
  }
  return faults;
}

class DeadMemory : public ::testing::TestWithParam<ms_reclaim_t> {};

TEST_P(DeadMemory, SoleLoaderMemoryIsTakenAwayOrZapped) {
  ms_metaspace_t* ms = create_checked(GetParam());
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  Blocks blocks;
  // Its first Klasses come from the micro pool (up to 8 KiB of them): in shared chunks that stay
  // with the pool (zapped) when they are its current chunk or tail, as a micro loader's blocks.
  Blocks pooled;
  for (int c = 0; c < 400; c++) {
    const bool class_chunk = loader_stats(l).chunks[MS_SPACE_CLASS] > 0;
    fill(l, class_chunk ? &blocks : &pooled, 1);
  }
  ASSERT_FALSE(pooled.empty());
  for (auto it = pooled.begin(); it != pooled.end();) {  // its non-class blocks are its own
    if (ms_is_class_space(ms, it->first)) {
      ++it;
    } else {
      blocks.push_back(*it);
      it = pooled.erase(it);
    }
  }
  // A block of its own chunk, larger than any granule.
  char* big = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 200 * 1024));
  ASSERT_NE(big, nullptr) << last_error();
  std::memset(big, 0x5A, 200 * 1024);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK) << last_error();

  unsigned char v = 0;
  size_t faults = count_faulting(blocks);
  size_t pooled_faults = count_faulting(pooled);  // either way: faulting or zapped
  EXPECT_LE(pooled_faults, pooled.size());
  if (GetParam() == MS_RECLAIM_NONE) {
    // Policy none never uncommits, not even in checked mode: the memory stays, zapped.
    EXPECT_EQ(faults, 0u);
    ASSERT_TRUE(readable(big + 100 * 1024, &v));
    EXPECT_EQ(v, 0xD5);
  } else {
    // Merged back into root chunks and uncommitted whole.
    EXPECT_EQ(faults, blocks.size());
    EXPECT_FALSE(readable(big, &v));
    EXPECT_FALSE(readable(big + 100 * 1024, &v));
  }
  EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
  ms_destroy(ms);
}

TEST_P(DeadMemory, NextToALiveLoaderNoOldDataIsVisible) {
  ms_metaspace_t* ms = create_checked(GetParam());
  ms_loader_t* live = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_loader_t* dead = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  Blocks live_blocks, dead_blocks;
  for (int round = 0; round < 50; round++) {
    fill(live, &live_blocks, 4);
    fill(dead, &dead_blocks, 4);
  }
  ASSERT_EQ(ms_loader_destroy(dead), MS_OK) << last_error();
  size_t faults = count_faulting(dead_blocks);
  if (GetParam() != MS_RECLAIM_NONE) {
    EXPECT_GT(faults, 0u) << "none of " << dead_blocks.size() << " dead blocks faults";
  }
  // The live loader is untouched.
  for (auto [p, bytes] : live_blocks) {
    unsigned char v = 0;
    ASSERT_TRUE(readable(p, &v));
    ASSERT_EQ(v, 0x5A);
  }
  EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
  // The dead loader's memory is handed out again, committed and accessible.
  ms_loader_t* next = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  Blocks next_blocks;
  fill(next, &next_blocks, 200);
  EXPECT_EQ(ms_verify(ms), MS_OK) << last_error();
  ms_destroy(ms);
}

std::string policy_name(const ::testing::TestParamInfo<ms_reclaim_t>& info) {
  static const char* const names[] = {"None", "Balanced", "Aggressive"};
  return names[info.param];
}

INSTANTIATE_TEST_SUITE_P(Policies, DeadMemory,
                         ::testing::Values(MS_RECLAIM_NONE, MS_RECLAIM_BALANCED,
                                           MS_RECLAIM_AGGRESSIVE),
                         policy_name);

}  // namespace
}  // namespace metaspace::test
