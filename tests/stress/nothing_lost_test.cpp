// Nothing lost: destroying a metaspace unmaps every byte it reserved, whatever state it was in
// (live loaders, free blocks, committed free chunks, checked-mode protections), checked against
// the kernel's own list of mappings in /proc/self/maps.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <vector>

#include "proc_memory.hpp"

namespace {

using proc_memory::Mapping;

// Address ranges mapped now, merged (neighbours with different flags are one range here).
std::vector<std::pair<uintptr_t, uintptr_t>> mapped_ranges() {
  std::vector<std::pair<uintptr_t, uintptr_t>> r;
  for (const Mapping& m : proc_memory::mappings()) {
    if (!r.empty() && r.back().second == m.start) {
      r.back().second = m.end;
    } else {
      r.push_back({m.start, m.end});
    }
  }
  return r;
}

bool is_mapped(const std::vector<std::pair<uintptr_t, uintptr_t>>& ranges, uintptr_t p) {
  return std::any_of(ranges.begin(), ranges.end(),
                     [p](const auto& r) { return p >= r.first && p < r.second; });
}

void fill_and_destroy(const ms_settings_t& s, bool destroy_loaders_first) {
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  std::vector<ms_loader_t*> loaders;
  std::vector<uintptr_t> probes;  // addresses inside the metaspace's reservations
  probes.push_back(ms_class_space_base(ms));
  for (int i = 0; i < 40; i++) {
    ms_loader_t* l = ms_loader_create(ms, static_cast<ms_loader_kind_t>(i % 3),
                                      i % 5 == 0 ? MS_LOADER_SHARED : 0);
    ASSERT_NE(l, nullptr);
    for (int k = 0; k < 300; k++) {
      size_t n = 8 + static_cast<size_t>((i * 131 + k * 17) % 900);
      void* p = ms_allocate(l, k % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, n);
      ASSERT_NE(p, nullptr) << ms_last_error_text();
      if (k % 3 == 0) ASSERT_EQ(ms_deallocate(l, p, n), MS_OK);
      if (k == 0 || k == 299) probes.push_back(reinterpret_cast<uintptr_t>(p));
    }
    // Big blocks force more non-class nodes.
    void* big = ms_allocate(l, MS_SPACE_NONCLASS, 3u << 20);
    ASSERT_NE(big, nullptr) << ms_last_error_text();
    probes.push_back(reinterpret_cast<uintptr_t>(big));
    loaders.push_back(l);
  }
  // Kill half: free chunks, some uncommitted, some merged.
  for (size_t i = 0; i < loaders.size(); i += 2) ASSERT_EQ(ms_loader_destroy(loaders[i]), MS_OK);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_GT(st.space[MS_SPACE_NONCLASS].nodes, 1u);
  if (destroy_loaders_first) {
    for (size_t i = 1; i < loaders.size(); i += 2) ASSERT_EQ(ms_loader_destroy(loaders[i]), MS_OK);
    ms_purge(ms);
    ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
    EXPECT_EQ(st.total.used_bytes, 0u);
    if (s.reclaim != MS_RECLAIM_NONE) {
      // Only bookkeeping (remembered dead handles, spare chunk headers) stays.
      EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes) << "all loaders dead and purged";
    }
  }
  // Empty non-class nodes may be unmapped already (purge with a reclaiming policy); the class
  // space stays reserved until the end.
  auto during = mapped_ranges();
  ASSERT_TRUE(is_mapped(during, probes.front()));
  if (!destroy_loaders_first) {
    for (uintptr_t p : probes) ASSERT_TRUE(is_mapped(during, p));
  }
  ms_destroy(ms);
  auto after = mapped_ranges();
  for (uintptr_t p : probes) {
    EXPECT_FALSE(is_mapped(after, p)) << std::hex << p << " still mapped after ms_destroy";
  }
}

class NothingLost : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(NothingLost, DestroyUnmapsEverything) {
  auto [checked, reclaim, destroy_loaders_first] = GetParam();
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = checked;
  s.reclaim = static_cast<ms_reclaim_t>(reclaim);
  s.node_bytes = 16u << 20;  // several nodes
  s.class_alignment_bytes = 64;
  size_t maps_before = proc_memory::mapping_count();
  auto before = mapped_ranges();
  fill_and_destroy(s, destroy_loaders_first);
  if (HasFatalFailure()) return;
  // The process's mappings are the ones it had before (malloc may have grown the heap: that is
  // not ours, and neither are its arenas; compare only ranges that did not exist before).
  auto after = mapped_ranges();
  size_t new_ranges = 0;
  for (const auto& r : after) {
    bool existed = std::any_of(before.begin(), before.end(), [&](const auto& b) {
      return r.first < b.second && b.first < r.second;
    });
    if (!existed) new_ranges++;
  }
  EXPECT_LE(new_ranges, 2u) << "mappings before " << maps_before << ", after "
                            << proc_memory::mapping_count();
}

INSTANTIATE_TEST_SUITE_P(AllModes, NothingLost,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Values(0, 1, 2),
                                            ::testing::Bool()));

}  // namespace
