// Limits: with a small cap (max_committed_bytes), loaders allocate until refused. The refusal is
// clean (NULL, MS_ERR_LIMIT, nothing half done: ms_verify passes, committed stays under the cap),
// the GC threshold callback fired before it, and freeing loaders (+ ms_purge) makes room again.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
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

// Cap 4 MiB, threshold 3 MiB, 2 MiB committed: a 2.5 MiB request jumps
// over both in one step. It used to come back MS_ERR_LIMIT with no callback at all.
// Cap 4 MiB, threshold 3 MiB, a callback that only counts.
ms_metaspace_t* counted_gc_metaspace(ms_reclaim_t reclaim, int* calls) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = reclaim;
  s.max_committed_bytes = 4u << 20;
  s.gc_threshold_bytes = 3u << 20;
  s.gc_callback = [](ms_metaspace_t*, size_t, void* user) { ++*static_cast<int*>(user); };
  s.gc_callback_user = calls;
  return ms_create(&s);
}

TEST(GcThreshold, TheRuntimeIsToldBeforeTheCapRefuses) {
  struct Log {
    int calls = 0;
  } log;
  ms_metaspace_t* ms = counted_gc_metaspace(MS_RECLAIM_BALANCED, &log.calls);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 2u << 20), nullptr);
  EXPECT_EQ(log.calls, 0);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 2560u << 10), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
  EXPECT_GE(log.calls, 1) << "MS_ERR_LIMIT without the GC callback";
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

// With reclaim none nothing is ever uncommitted, so committed never falls below the threshold
// again: the callback fired once and 3 440 refusals followed in silence. Now every refusal is
// told first.
TEST(GcThreshold, EveryRefusalIsToldWithReclaimNone) {
  struct Log {
    int calls = 0;
  } log;
  ms_metaspace_t* ms = counted_gc_metaspace(MS_RECLAIM_NONE, &log.calls);
  ASSERT_NE(ms, nullptr);
  int refusals = 0;
  for (int i = 0; i < 2000 && refusals < 200; i++) {
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    for (int k = 0; k < 16; k++) {
      int before = log.calls;
      if (ms_allocate(l, MS_SPACE_NONCLASS, 4000) == nullptr) {
        ASSERT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
        ASSERT_GT(log.calls, before) << "refusal " << refusals << " without a callback";
        refusals++;
      }
    }
    if (i % 2 == 0) ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  }
  EXPECT_GE(refusals, 200);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

// The metaspace of the runtime tests below: 1 MiB root chunks, a 4 MiB cap, the GC threshold
// given (at the cap: only a refusal reaches the runtime) and the runtime's callback.
ms_settings_t runtime_settings(size_t threshold, ms_gc_callback_t callback, void* user) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.root_chunk_bytes = 1u << 20;
  s.max_committed_bytes = 4u << 20;
  s.gc_threshold_bytes = threshold;
  s.gc_callback = callback;
  s.gc_callback_user = user;
  return s;
}

// Allocates 1000-byte blocks of `l` until the GC callback has counted a call in `calls` or a
// request is refused; returns the last call's block (NULL if it was refused), *served the blocks
// served before it. At most 100 000 blocks.
void* allocate_until_told(ms_loader_t* l, const int& calls, int* served) {
  void* p = nullptr;
  while (calls == 0 && *served < 100000) {
    p = ms_allocate(l, MS_SPACE_NONCLASS, 1000);
    if (p == nullptr) break;
    ++*served;
  }
  return p;
}

// The callback is the runtime's GC: it unloads and purges, and the refused request is tried
// again and served. From the callback ms_gc_done tells the new threshold (policy: at least 40 %
// free, at most 70 %, at most the cap).
TEST(GcThreshold, ACallbackThatUnloadsMakesTheRefusedRequestSucceed) {
  struct Runtime {
    ms_loader_t* victim = nullptr;
    int calls = 0;
    size_t new_threshold = 0;
    size_t committed_after = 0;
  } rt;
  auto on_gc = [](ms_metaspace_t* ms, size_t, void* user) {
    auto* rt = static_cast<Runtime*>(user);
    rt->calls++;
    if (rt->victim != nullptr) {
      EXPECT_EQ(ms_loader_destroy(rt->victim), MS_OK);
      rt->victim = nullptr;
      ms_purge(ms);
    }
    rt->new_threshold = ms_gc_done(ms);
    ms_stats_t st;
    EXPECT_EQ(ms_get_stats(ms, &st), MS_OK);
    rt->committed_after = st.total.committed_bytes;
  };
  ms_settings_t s = runtime_settings(4u << 20, on_gc, &rt);  // only the refusal is told
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  rt.victim = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  for (int i = 0; i < 3; i++) ASSERT_NE(ms_allocate(rt.victim, MS_SPACE_NONCLASS, 1000000), nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 1000000);
  if (p == nullptr) FAIL() << ms_last_error_text();
  p = ms_allocate(l, MS_SPACE_NONCLASS, 1000000);  // 5 MB in all: only after the unloading
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  std::memset(p, 1, 1000000);
  EXPECT_GE(rt.calls, 1);
  EXPECT_EQ(rt.victim, nullptr) << "the runtime was never asked to collect";
  EXPECT_GT(rt.new_threshold, rt.committed_after);
  EXPECT_LE(rt.new_threshold, size_t{4} << 20);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

// A runtime whose GC, called from inside ms_allocate, unloads the very loader that is allocating,
// and creates another: the new loader takes the dead one's object at once (the same address,
// another handle tag). The allocation must end with MS_ERR_DESTROYED and touch nothing of the new
// loader. It used to take the object's lock after the callback and serve the request from the
// new loader's memory: the caller of a dead loader got a block of a live one. Both reports:
// the threshold crossed by a served request (with the block in hand) and the cap's refusal
// (before the retry), with and without checked mode.
class CallbackDestroysTheAllocatingLoader
    : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(CallbackDestroysTheAllocatingLoader, TheCallGetsDestroyedAndTheNewLoaderIsUntouched) {
  auto [checked, at_refusal] = GetParam();
  struct Runtime {
    ms_loader_t* victim = nullptr;
    ms_loader_t* created = nullptr;
    int calls = 0;
  } rt;
  auto on_gc = [](ms_metaspace_t* ms, size_t, void* user) {
    auto* rt = static_cast<Runtime*>(user);
    rt->calls++;
    if (rt->victim == nullptr) return;
    EXPECT_EQ(ms_loader_destroy(rt->victim), MS_OK);
    ms_purge(ms);
    rt->created = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    EXPECT_NE(rt->created, nullptr) << ms_last_error_text();
  };
  // At the cap: only the refusal tells the runtime; else a crossing with the block served.
  ms_settings_t s = runtime_settings(at_refusal ? 4u << 20 : 2u << 20, on_gc, &rt);
  s.checked = checked;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  rt.victim = l;
  int served = 0;
  void* p = allocate_until_told(l, rt.calls, &served);
  ASSERT_EQ(rt.calls, 1) << "the callback never came; " << served << " blocks served";
  EXPECT_EQ(p, nullptr) << "a block of a loader the callback destroyed";
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  ASSERT_NE(rt.created, nullptr);
  // The new loader lives where the victim did, under another handle, and holds nothing.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(rt.created) & ~uintptr_t{15},
            reinterpret_cast<uintptr_t>(l) & ~uintptr_t{15});
  EXPECT_NE(rt.created, l);
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(rt.created, &ls), MS_OK) << ms_last_error_text();
  EXPECT_EQ(ls.used_bytes[MS_SPACE_NONCLASS] + ls.used_bytes[MS_SPACE_CLASS], 0u);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  // The dead handle stays dead; the new loader works.
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 8), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED);
  EXPECT_NE(ms_allocate(rt.created, MS_SPACE_NONCLASS, 1000), nullptr) << ms_last_error_text();
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

INSTANTIATE_TEST_SUITE_P(
    GcThreshold, CallbackDestroysTheAllocatingLoader,
    ::testing::Combine(::testing::Values(0, 1), ::testing::Values(false, true)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) ? "Checked" : "Normal") +
             (std::get<1>(info.param) ? "AtTheCapsRefusal" : "AtTheThreshold");
    });

// The GC callback destroys the whole metaspace (a host tearing its runtime down on metadata
// pressure), perhaps creating another at once: the allocation that called it returns NULL with
// MS_ERR_DESTROYED and touches nothing after the callback (it used to call the destroyed
// limiter's gc_done: a use after free). Both reports (threshold crossed with the block served,
// the cap's refusal), with and without checked mode; and from ms_set_gc_threshold, which delivers
// a pending event itself.
class CallbackDestroysTheMetaspace : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(CallbackDestroysTheMetaspace, TheAllocationGetsDestroyedAndTouchesNothingAfter) {
  auto [checked, at_refusal] = GetParam();
  struct Runtime {
    ms_metaspace_t* created = nullptr;
    int calls = 0;
    bool create_another = true;
  } rt;
  auto on_gc = [](ms_metaspace_t* ms, size_t, void* user) {
    auto* rt = static_cast<Runtime*>(user);
    rt->calls++;
    ms_destroy(ms);
    if (rt->create_another) {
      rt->created = ms_create(nullptr);
      EXPECT_NE(rt->created, nullptr) << ms_last_error_text();
    }
  };
  ms_settings_t s = runtime_settings(at_refusal ? 4u << 20 : 2u << 20, on_gc, &rt);
  s.checked = checked;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  int served = 0;
  void* p = allocate_until_told(l, rt.calls, &served);
  ASSERT_EQ(rt.calls, 1) << "the callback never came; " << served << " blocks served";
  EXPECT_EQ(p, nullptr) << "a block of a destroyed metaspace";
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  ms_usage_t u{};
  u.size = sizeof u;
  EXPECT_EQ(ms_get_usage(ms, &u), MS_ERR_DESTROYED);
  ASSERT_NE(rt.created, nullptr);
  EXPECT_NE(rt.created, ms);
  EXPECT_EQ(ms_verify(rt.created), MS_OK) << ms_last_error_text();
  ms_destroy(rt.created);

  // From ms_set_gc_threshold: a threshold below what is committed delivers at once.
  rt = Runtime{};
  rt.create_another = false;
  ms_metaspace_t* second = ms_create(nullptr);
  ASSERT_NE(second, nullptr);
  ms_loader_t* l2 = ms_loader_create(second, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(l2, MS_SPACE_NONCLASS, 100000), nullptr);
  ms_set_gc_threshold(second, 4096, on_gc, &rt);
  EXPECT_EQ(rt.calls, 1);
  EXPECT_EQ(ms_get_usage(second, &u), MS_ERR_DESTROYED);
}

INSTANTIATE_TEST_SUITE_P(
    GcThreshold, CallbackDestroysTheMetaspace,
    ::testing::Combine(::testing::Values(0, 1), ::testing::Values(false, true)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) ? "Checked" : "Normal") +
             (std::get<1>(info.param) ? "AtTheCapsRefusal" : "AtTheThreshold");
    });

// A runtime whose GC allocates metadata itself: from within the callback the cap refuses again.
// The callback is not entered again from within itself on the same thread (that recursed until
// the stack overflowed): the inner refusal is MS_ERR_LIMIT at once, and so is the outer one.
TEST(GcThreshold, ACallbackThatAllocatesIsNotEnteredAgainFromWithin) {
  struct Runtime {
    ms_loader_t* loader = nullptr;
    int calls = 0;
    int depth = 0;
    int max_depth = 0;
    int inner_refusals = 0;
  } rt;
  auto on_gc = [](ms_metaspace_t*, size_t, void* user) {
    auto* rt = static_cast<Runtime*>(user);
    rt->calls++;
    rt->max_depth = std::max(rt->max_depth, ++rt->depth);
    if (ms_allocate(rt->loader, MS_SPACE_NONCLASS, 100000) == nullptr) {
      EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
      rt->inner_refusals++;
    }
    rt->depth--;
  };
  ms_settings_t s = runtime_settings(4u << 20, on_gc, &rt);
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  rt.loader = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(rt.loader, nullptr);
  int refused_at = -1;
  for (int i = 0; i < 100 && refused_at < 0; i++) {
    if (ms_allocate(rt.loader, MS_SPACE_NONCLASS, 100000) == nullptr) refused_at = i;
  }
  ASSERT_GE(refused_at, 0);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
  EXPECT_EQ(rt.max_depth, 1);
  EXPECT_GE(rt.inner_refusals, 1);
  EXPECT_LE(rt.calls, 2) << "one refusal, told before and after its retry";
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  // Outside the callback the runtime is told again at the next refusal.
  int before = rt.calls;
  EXPECT_EQ(ms_allocate(rt.loader, MS_SPACE_NONCLASS, 100000), nullptr);
  EXPECT_GT(rt.calls, before);
  ms_destroy(ms);
}

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
