// Limits: with a small cap (max_committed_bytes), loaders allocate until refused. The refusal is
// clean (NULL, MS_ERR_LIMIT, nothing half done: ms_verify passes, committed stays under the cap),
// the GC threshold callback fired before it, and freeing loaders (+ ms_purge) makes room again.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <cstring>
#include <vector>

namespace {

struct GcLog {
  std::atomic<int> calls{0};
  std::atomic<int> at_event{-1};       // allocation counter when the first callback came
  std::atomic<size_t> committed{0};    // committed bytes reported then
  std::atomic<int>* clock = nullptr;
};

void on_gc(ms_metaspace_t* ms, size_t committed, void* user) {
  auto* log = static_cast<GcLog*>(user);
  if (log->calls.fetch_add(1) == 0) {
    log->at_event = log->clock->load();
    log->committed = committed;
  }
  // Outside all locks: the runtime may look at the metaspace from here.
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), MS_OK);
}

class Limits : public ::testing::TestWithParam<std::tuple<int, ms_reclaim_t, ms_space_t>> {};

TEST_P(Limits, RefusedCleanlyAfterGcCallbackAndRoomAgainAfterFreeing) {
  auto [checked, reclaim, space] = GetParam();
  constexpr size_t kCap = 4u << 20;
  constexpr size_t kThreshold = 3u << 20;
  std::atomic<int> clock{0};
  GcLog log;
  log.clock = &clock;
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = checked;
  s.reclaim = reclaim;
  s.max_committed_bytes = kCap;
  s.gc_threshold_bytes = kThreshold;
  s.gc_callback = on_gc;
  s.gc_callback_user = &log;
  s.root_chunk_bytes = 1u << 20;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();

  std::vector<ms_loader_t*> loaders;
  int refused_at = -1;
  size_t allocated = 0;
  for (int i = 0; i < 10000 && refused_at < 0; i++) {
    ms_loader_t* l = ms_loader_create(ms, static_cast<ms_loader_kind_t>(1 + i % 2), 0);
    ASSERT_NE(l, nullptr);
    loaders.push_back(l);
    for (int k = 0; k < 64; k++) {
      size_t n = 512 + 64 * static_cast<size_t>(k % 16);
      void* p = ms_allocate(l, space, n);
      clock++;
      if (p == nullptr) {
        ASSERT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
        refused_at = clock.load();
        break;
      }
      std::memset(p, 0x33, n);
      allocated += n;
    }
  }
  ASSERT_GE(refused_at, 0) << "never refused";
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  // The cap is on chunk memory; the bookkeeping (overhead) is not capped.
  size_t chunk_memory = st.total.committed_bytes - st.total.overhead_bytes;
  EXPECT_LE(chunk_memory, kCap);
  EXPECT_GE(chunk_memory + 2 * (1u << 20), kCap) << "refused far below the cap";
  // The threshold was crossed first, and the runtime heard about it before the refusal.
  EXPECT_GE(log.calls.load(), 1);
  EXPECT_GE(log.at_event.load(), 0);
  EXPECT_LT(log.at_event.load(), refused_at);
  EXPECT_GE(log.committed.load(), kThreshold);
  // Still refused, still clean.
  EXPECT_EQ(ms_allocate(loaders.back(), space, 64u << 10), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();

  // The runtime unloads: every other loader goes, then purge.
  size_t before = st.total.committed_bytes;
  std::vector<ms_loader_t*> kept;
  for (size_t i = 0; i < loaders.size(); i++) {
    if (i % 2 == 0 || i + 1 == loaders.size()) {
      ASSERT_EQ(ms_loader_destroy(loaders[i]), MS_OK);
    } else {
      kept.push_back(loaders[i]);
    }
  }
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  if (reclaim != MS_RECLAIM_NONE) EXPECT_LT(st.total.committed_bytes, before);
  // Room again: new loaders get at least a third of what was allocated before.
  size_t again = 0;
  for (int i = 0; again < allocated / 3; i++) {
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    kept.push_back(l);
    for (int k = 0; k < 64; k++) {
      void* p = ms_allocate(l, space, 1024);
      ASSERT_NE(p, nullptr) << "after freeing half: " << ms_last_error_text() << " at " << again;
      again += 1024;
    }
  }
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  for (ms_loader_t* l : kept) ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  ms_purge(ms);
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.total.used_bytes, 0u);
  if (reclaim != MS_RECLAIM_NONE) EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes);
  ms_destroy(ms);
}

INSTANTIATE_TEST_SUITE_P(
    CapAndThreshold, Limits,
    ::testing::Combine(::testing::Values(0, 1),
                       ::testing::Values(MS_RECLAIM_NONE, MS_RECLAIM_BALANCED,
                                         MS_RECLAIM_AGGRESSIVE),
                       ::testing::Values(MS_SPACE_NONCLASS, MS_SPACE_CLASS)));

// A class space that is full refuses with its own error, and dead loaders make room.
TEST(Limits, ClassSpaceFullIsRefusedAndRecovers) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.root_chunk_bytes = 256u << 10;
  s.class_space_bytes = 1u << 20;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  std::vector<ms_loader_t*> loaders;
  bool full = false;
  for (int i = 0; i < 1000 && !full; i++) {
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    loaders.push_back(l);
    for (int k = 0; k < 100; k++) {
      if (ms_allocate(l, MS_SPACE_CLASS, 1000) == nullptr) {
        ASSERT_EQ(ms_last_error(), MS_ERR_CLASS_SPACE_FULL) << ms_last_error_text();
        full = true;
        break;
      }
    }
  }
  ASSERT_TRUE(full);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  // Non-class memory is not affected.
  EXPECT_NE(ms_allocate(loaders.back(), MS_SPACE_NONCLASS, 1000), nullptr);
  for (size_t i = 0; i + 1 < loaders.size(); i++) ASSERT_EQ(ms_loader_destroy(loaders[i]), MS_OK);
  EXPECT_NE(ms_allocate(loaders.back(), MS_SPACE_CLASS, 1000), nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

}  // namespace
