// Every error path of the C API: the call fails with the documented code and a sentence, and the
// metaspace stays consistent (ms_verify == MS_OK) afterwards.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "loader/loader_arenas.hpp"
#include "os/fault_injection.hpp"
#include "support/gc_callbacks.hpp"
#include "support/ms_assertions.hpp"

namespace {

using metaspace::test::GcCallbacks;

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;

#define EXPECT_ERROR(code)                                                         \
  do {                                                                             \
    EXPECT_EQ(ms_last_error(), (code)) << ms_last_error_text();                    \
    EXPECT_NE(std::strlen(ms_last_error_text()), 0u);                              \
  } while (0)

class ApiErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ms_ = ms_create(nullptr);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
    loader_ = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(loader_, nullptr) << ms_last_error_text();
  }
  void TearDown() override { ms_destroy(ms_); }
  void verify() { ASSERT_MS_OK(ms_verify(ms_)); }

  ms_metaspace_t* ms_ = nullptr;
  ms_loader_t* loader_ = nullptr;
};

TEST_F(ApiErrors, SizeZero) {
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    EXPECT_EQ(ms_allocate(loader_, space, 0), nullptr);
    EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
    verify();
  }
  // After a successful allocation the window is live; size 0 must still not be served from it.
  ASSERT_NE(ms_allocate(loader_, MS_SPACE_NONCLASS, 16), nullptr);
  EXPECT_EQ(ms_allocate(loader_, MS_SPACE_NONCLASS, 0), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  verify();
}

TEST_F(ApiErrors, LargerThanRootChunk) {
  const size_t root = 4 * MiB;
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    EXPECT_EQ(ms_allocate(loader_, space, root + 1), nullptr);
    EXPECT_ERROR(MS_ERR_TOO_LARGE);
    verify();
    // Sizes that overflow when rounded up must not wrap into a small allocation.
    EXPECT_EQ(ms_allocate(loader_, space, SIZE_MAX), nullptr);
    EXPECT_ERROR(MS_ERR_TOO_LARGE);
    EXPECT_EQ(ms_allocate(loader_, space, SIZE_MAX - 6), nullptr);
    EXPECT_ERROR(MS_ERR_TOO_LARGE);
    verify();
  }
  // Exactly one root chunk is the largest block served.
  void* p = ms_allocate(loader_, MS_SPACE_NONCLASS, root);
  ASSERT_NE(p, nullptr) << ms_last_error_text();
  std::memset(p, 1, root);
  verify();
}

TEST_F(ApiErrors, BadSpace) {
  for (int space : {2, -1, 1000}) {
    EXPECT_EQ(ms_allocate(loader_, static_cast<ms_space_t>(space), 16), nullptr);
    EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ms_allocate_slow(loader_, static_cast<ms_space_t>(space), 16), nullptr);
    EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
    verify();
  }
}

TEST_F(ApiErrors, NullAndForeignHandles) {
  EXPECT_EQ(ms_allocate(nullptr, MS_SPACE_NONCLASS, 16), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_deallocate(nullptr, loader_, 16), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_destroy(nullptr), MS_ERR_INVALID_ARGUMENT);
  ms_loader_stats_t ls;
  EXPECT_EQ(ms_loader_get_stats(nullptr, &ls), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_get_stats(loader_, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_create(nullptr, MS_LOADER_STANDARD, 0), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(nullptr, &st), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_get_stats(ms_, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_verify(nullptr), MS_ERR_INVALID_ARGUMENT);
  ms_purge(nullptr);  // harmless
  // Memory that is not a loader (all zeros, so no magic) is refused, not used.
  alignas(64) static unsigned char not_a_loader[1024] = {};
  auto* fake = reinterpret_cast<ms_loader_t*>(not_a_loader);
  EXPECT_EQ(ms_allocate(fake, MS_SPACE_NONCLASS, 16), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_destroy(fake), MS_ERR_INVALID_ARGUMENT);
  verify();
}

TEST_F(ApiErrors, BadLoaderKindAndFlags) {
  EXPECT_EQ(ms_loader_create(ms_, static_cast<ms_loader_kind_t>(3), 0), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_create(ms_, static_cast<ms_loader_kind_t>(-1), 0), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_loader_create(ms_, MS_LOADER_STANDARD, 2u), nullptr);
  EXPECT_ERROR(MS_ERR_INVALID_ARGUMENT);
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.loaders, 1u);
  verify();
}

TEST_F(ApiErrors, DeallocateBadArguments) {
  char* p = static_cast<char*>(ms_allocate(loader_, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ms_deallocate(loader_, nullptr, 64), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_deallocate(loader_, p, 0), MS_ERR_INVALID_ARGUMENT);
  verify();
}

TEST_F(ApiErrors, DeallocateForeignPointer) {
  char* p = static_cast<char*>(ms_allocate(loader_, MS_SPACE_NONCLASS, 64));
  ASSERT_NE(p, nullptr);
  void* heap = std::malloc(64);
  EXPECT_EQ(ms_deallocate(loader_, heap, 64), MS_ERR_NOT_OWNED);
  EXPECT_ERROR(MS_ERR_NOT_OWNED);
  std::free(heap);
  int on_stack = 0;
  EXPECT_EQ(ms_deallocate(loader_, &on_stack, 8), MS_ERR_NOT_OWNED);
  // Inside the loader's chunk but not handed out yet.
  EXPECT_EQ(ms_deallocate(loader_, p + 64, 8), MS_ERR_NOT_OWNED);
  // Handed out, but the size runs past what was handed out.
  EXPECT_EQ(ms_deallocate(loader_, p, 128), MS_ERR_NOT_OWNED);
  // Not word aligned.
  EXPECT_EQ(ms_deallocate(loader_, p + 1, 8), MS_ERR_NOT_OWNED);
  verify();
  ms_loader_stats_t ls;
  ASSERT_MS_OK(ms_loader_get_stats(loader_, &ls));
  EXPECT_EQ(ls.free_blocks_count[MS_SPACE_NONCLASS], 0u) << "a refused block was filed";
  ASSERT_MS_OK(ms_deallocate(loader_, p, 64));
  verify();
}

TEST_F(ApiErrors, DeallocatePointerOfAnotherLoader) {
  ms_loader_t* other = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(other, nullptr);
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    void* mine = ms_allocate(loader_, space, 600);
    void* theirs = ms_allocate(other, space, 600);
    ASSERT_NE(mine, nullptr);
    ASSERT_NE(theirs, nullptr);
    EXPECT_EQ(ms_deallocate(loader_, theirs, 600), MS_ERR_NOT_OWNED);
    EXPECT_EQ(ms_deallocate(other, mine, 600), MS_ERR_NOT_OWNED);
    verify();
    ASSERT_MS_OK(ms_deallocate(other, theirs, 600));
    verify();
  }
  ASSERT_MS_OK(ms_loader_destroy(other));
  verify();
}

TEST_F(ApiErrors, DestroyedLoader) {
  void* p = ms_allocate(loader_, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(ms_allocate(loader_, MS_SPACE_CLASS, 600), nullptr);
  ASSERT_MS_OK(ms_loader_destroy(loader_));
  verify();
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    // The inline path must not bump a dead loader's window.
    EXPECT_EQ(ms_allocate(loader_, space, 8), nullptr);
    EXPECT_ERROR(MS_ERR_DESTROYED);
  }
  EXPECT_EQ(ms_deallocate(loader_, p, 64), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_loader_destroy(loader_), MS_ERR_DESTROYED);
  ms_loader_stats_t ls;
  EXPECT_EQ(ms_loader_get_stats(loader_, &ls), MS_ERR_DESTROYED);
  verify();
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms_, &st));
  EXPECT_EQ(st.loaders, 0u);
  EXPECT_EQ(st.total.used_bytes, 0u);
}

TEST(ApiSettings, EveryRuleIsChecked) {
  struct Case {
    const char* what;
    void (*change)(ms_settings_t*);
  };
  const Case cases[] = {
      {"reclaim", [](ms_settings_t* s) { s->reclaim = static_cast<ms_reclaim_t>(3); }},
      {"root not power of 2", [](ms_settings_t* s) { s->root_chunk_bytes = 3 * MiB; }},
      {"root too small", [](ms_settings_t* s) { s->root_chunk_bytes = 32 * KiB; }},
      {"root too large", [](ms_settings_t* s) { s->root_chunk_bytes = 128 * MiB; }},
      {"granule not power of 2", [](ms_settings_t* s) { s->commit_granule_bytes = 24 * KiB; }},
      {"granule below page", [](ms_settings_t* s) { s->commit_granule_bytes = 512; }},
      {"granule above 1 MiB", [](ms_settings_t* s) { s->commit_granule_bytes = 2 * MiB; }},
      {"granule above root",
       [](ms_settings_t* s) {
         s->root_chunk_bytes = 64 * KiB;
         s->node_bytes = 64 * KiB;
         s->class_space_bytes = 64 * KiB;
         s->commit_granule_bytes = 128 * KiB;
       }},
      {"node zero", [](ms_settings_t* s) { s->node_bytes = 0; }},
      {"node not multiple of root", [](ms_settings_t* s) { s->node_bytes = 6 * MiB; }},
      {"class space zero", [](ms_settings_t* s) { s->class_space_bytes = 0; }},
      {"class space not multiple", [](ms_settings_t* s) { s->class_space_bytes = 6 * MiB; }},
      {"class space above 4 GiB",
       [](ms_settings_t* s) { s->class_space_bytes = size_t{4096 + 4} * MiB; }},
      {"class alignment not power of 2", [](ms_settings_t* s) { s->class_alignment_bytes = 24; }},
      {"class alignment below 8", [](ms_settings_t* s) { s->class_alignment_bytes = 4; }},
      {"class alignment above 1 KiB", [](ms_settings_t* s) { s->class_alignment_bytes = 2048; }},
      {"class base unaligned", [](ms_settings_t* s) { s->class_space_base = 0x800000000 + 4096; }},
      {"cap below a granule",
       [](ms_settings_t* s) {
         s->commit_granule_bytes = 64 * KiB;
         s->max_committed_bytes = 32 * KiB;
       }},
  };
  for (const Case& c : cases) {
    ms_settings_t s;
    ms_settings_init(&s);
    c.change(&s);
    EXPECT_EQ(ms_create(&s), nullptr) << c.what;
    EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_NE(std::strlen(ms_last_error_text()), 0u) << c.what;
  }
  // The limits themselves are accepted.
  ms_settings_t s;
  ms_settings_init(&s);
  s.root_chunk_bytes = 64 * KiB;
  s.node_bytes = 64 * KiB;
  s.class_space_bytes = 64 * KiB;
  s.class_alignment_bytes = 1024;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

// Settings that were accepted before: each is refused with a sentence
// that names the field and the allowed range.
TEST(ApiSettings, OutOfRangeValuesNameTheFieldAndRange) {
  struct Case {
    const char* what;
    void (*change)(ms_settings_t*);
    const char* names;  // expected in the error text
    const char* range;
  };
  const Case cases[] = {
      {"node 2^44", [](ms_settings_t* s) { s->node_bytes = size_t{1} << 44; }, "node size",
       "at most"},
      {"node 2^62", [](ms_settings_t* s) { s->node_bytes = size_t{1} << 62; }, "node size",
       "at most"},
      {"checked 2", [](ms_settings_t* s) { s->checked = 2; }, "checked", "0 (off) or 1 (on)"},
      {"checked -1", [](ms_settings_t* s) { s->checked = -1; }, "checked", "0 (off) or 1 (on)"},
      {"class space all guard",
       [](ms_settings_t* s) {
         s->root_chunk_bytes = 64 * KiB;
         s->commit_granule_bytes = 64 * KiB;
         s->class_space_bytes = 64 * KiB;
         s->node_bytes = 64 * KiB;
       },
       "class space size", "larger than the commit granule"},
      {"min free 100", [](ms_settings_t* s) { s->gc_min_free_percent = 100; }, "GC free ratios",
       "0..99"},
      {"max free below min",
       [](ms_settings_t* s) {
         s->gc_min_free_percent = 50;
         s->gc_max_free_percent = 40;
       },
       "GC free ratios", "from the minimum to 100"},
      {"max free 101", [](ms_settings_t* s) { s->gc_max_free_percent = 101; }, "GC free ratios",
       "from the minimum to 100"},
  };
  for (const Case& c : cases) {
    ms_settings_t s;
    ms_settings_init(&s);
    c.change(&s);
    ms_metaspace_t* ms = ms_create(&s);
    EXPECT_EQ(ms, nullptr) << c.what;
    if (ms != nullptr) ms_destroy(ms);
    EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_NE(std::strstr(ms_last_error_text(), c.names), nullptr) << c.what << ": "
                                                                   << ms_last_error_text();
    EXPECT_NE(std::strstr(ms_last_error_text(), c.range), nullptr) << c.what << ": "
                                                                   << ms_last_error_text();
  }
  // The bounds themselves are accepted and work.
  ms_settings_t s;
  ms_settings_init(&s);
  s.node_bytes = size_t{4} << 30;
  s.checked = 1;
  s.root_chunk_bytes = 64 * KiB;
  s.commit_granule_bytes = 64 * KiB;
  s.class_space_bytes = 128 * KiB;  // guard granule + one usable
  s.gc_min_free_percent = 99;
  s.gc_max_free_percent = 100;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  EXPECT_NE(ms_allocate(l, MS_SPACE_CLASS, 64), nullptr) << ms_last_error_text();
  EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
  // All three GC policy fields 0: a fixed threshold, accepted.
  ms_settings_init(&s);
  s.gc_min_free_percent = 0;
  s.gc_max_free_percent = 0;
  s.gc_min_expansion_bytes = 0;
  ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_destroy(ms);
}

// Sizes from SIZE_MAX - 6 up rounded to 0 words and filed a 0-word block
// (UBSan: bin index out of bounds; the next allocation crashed). Larger than any block: not owned.
TEST(ApiDeallocate, SizesNearSizeMaxAreNotOwned) {
  for (int checked : {0, 1}) {
    ms_settings_t s;
    ms_settings_init(&s);
    s.checked = checked;
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr);
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    char* p = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
    ASSERT_NE(p, nullptr);
    for (size_t n : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 6, SIZE_MAX - 7, SIZE_MAX / 2,
                     size_t{4} * MiB + 1}) {
      EXPECT_EQ(ms_deallocate(l, p, n), MS_ERR_NOT_OWNED) << "checked " << checked << ", " << n;
      EXPECT_ERROR(MS_ERR_NOT_OWNED);
      ASSERT_MS_OK(ms_verify(ms));
    }
    // Nothing was filed: the block is still live and the loader goes on.
    for (int i = 0; i < 4; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 16), nullptr);
    ASSERT_MS_OK(ms_deallocate(l, p, 64));
    ASSERT_MS_OK(ms_verify(ms));
    ms_destroy(ms);
  }
}

TEST(ApiLimits, CapReachedThenRoomAgainAfterUnloading) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.max_committed_bytes = 2 * MiB;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  std::vector<ms_loader_t*> loaders;
  for (int i = 0; i < 8; i++) loaders.push_back(ms_loader_create(ms, MS_LOADER_STANDARD, 0));
  bool hit = false;
  size_t served = 0;
  for (int round = 0; round < 100000 && !hit; round++) {
    ms_loader_t* l = loaders[round % loaders.size()];
    ms_space_t space = round % 40 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    size_t bytes = space == MS_SPACE_CLASS ? 700 : 64 + round % 200;
    void* p = ms_allocate(l, space, bytes);
    if (p == nullptr) {
      EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT) << ms_last_error_text();
      hit = true;
    } else {
      served += bytes;
    }
  }
  ASSERT_TRUE(hit) << "the cap was never reached";
  ASSERT_MS_OK(ms_verify(ms));
  ms_stats_t st;
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_LE(st.total.committed_bytes - st.total.overhead_bytes, 2 * MiB) << "the cap";
  EXPECT_GT(served, 1 * MiB);
  // Still at the cap: a new loader cannot get memory either.
  ms_loader_t* late = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  EXPECT_EQ(ms_allocate(late, MS_SPACE_NONCLASS, 64 * KiB), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_LIMIT);
  ASSERT_MS_OK(ms_verify(ms));

  for (ms_loader_t* l : loaders) ASSERT_MS_OK(ms_loader_destroy(l));
  ms_purge(ms);
  ASSERT_MS_OK(ms_verify(ms));
  ASSERT_MS_OK(ms_get_stats(ms, &st));
  EXPECT_LT(st.total.committed_bytes, 256 * KiB);
  for (int i = 0; i < 16; i++) {
    ASSERT_NE(ms_allocate(late, MS_SPACE_NONCLASS, 64 * KiB), nullptr) << ms_last_error_text();
  }
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

// A fixed threshold (GC policy fields 0): one callback per crossing.
TEST(ApiLimits, GcThresholdCallbackFiresOnceWhenCrossed) {
  GcCallbacks calls;
  ms_settings_t s;
  ms_settings_init(&s);
  s.gc_min_free_percent = 0;
  s.gc_max_free_percent = 0;
  s.gc_min_expansion_bytes = 0;
  s.gc_threshold_bytes = 1 * MiB;
  s.gc_callback = GcCallbacks::record;
  s.gc_callback_user = &calls;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_stats_t st;
  for (;;) {
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 128), nullptr);
    ASSERT_MS_OK(ms_get_stats(ms, &st));
    // The threshold watches chunk memory (the limiter), not the bookkeeping overhead. Chunk
    // memory lies between committed - overhead (overhead includes the loader's arenas, which
    // lie inside its first chunk) and that plus those arenas.
    size_t chunk_memory_at_least = st.total.committed_bytes - st.total.overhead_bytes;
    size_t chunk_memory_at_most =
        chunk_memory_at_least + metaspace::LoaderArenas::chunk_prefix_bytes();
    if (chunk_memory_at_least >= 1 * MiB) break;
    if (chunk_memory_at_most < 1 * MiB) {
      ASSERT_EQ(calls.calls, 0) << "fired below the threshold";
    }
  }
  EXPECT_EQ(calls.calls, 1);
  EXPECT_EQ(calls.last_ms, ms);
  EXPECT_GE(calls.last_committed, 1 * MiB);
  ASSERT_MS_OK(ms_verify(ms));
  // Growing further does not fire again.
  for (int i = 0; i < 20000; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 128), nullptr);
  EXPECT_EQ(calls.calls, 1);
  ASSERT_MS_OK(ms_verify(ms));
  // A threshold set below the current level is reported at once.
  GcCallbacks again;
  ms_set_gc_threshold(ms, 512 * KiB, GcCallbacks::record, &again);
  EXPECT_EQ(again.calls, 1);
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

TEST(ApiLimits, ClassSpaceFull) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 4 * MiB;  // one root chunk
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  size_t served = 0;
  for (;;) {
    void* p = ms_allocate(l, MS_SPACE_CLASS, 1000);
    if (p == nullptr) break;
    served += 1000;
    ASSERT_LT(served, 4 * MiB);
  }
  EXPECT_EQ(ms_last_error(), MS_ERR_CLASS_SPACE_FULL) << ms_last_error_text();
  EXPECT_GT(served, 3 * MiB);
  ASSERT_MS_OK(ms_verify(ms));
  // Non-class space is unaffected.
  EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 1000), nullptr);
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

TEST(ApiLimits, KernelRefusals) {
  namespace os = metaspace::os;
  os::inject_fault(os::FaultPoint::kReserve, 1);  // the class space reservation
  EXPECT_EQ(ms_create(nullptr), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED) << ms_last_error_text();
  os::inject_fault(os::FaultPoint::kReserve, 0);

  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  // The non-class space reserves its first node on first use.
  os::inject_fault(os::FaultPoint::kReserve, 1);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED) << ms_last_error_text();
  os::inject_fault(os::FaultPoint::kReserve, 0);
  ASSERT_MS_OK(ms_verify(ms));
  // First commit into the class space.
  os::inject_fault(os::FaultPoint::kCommit, 1);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED) << ms_last_error_text();
  os::inject_fault(os::FaultPoint::kCommit, 0);
  ASSERT_MS_OK(ms_verify(ms));
  EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr) << ms_last_error_text();
  EXPECT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

TEST(ApiChecked, DoubleFreeDetected) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = 1;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 100);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 100), nullptr);
  ASSERT_MS_OK(ms_deallocate(l, p, 100));
  EXPECT_EQ(ms_deallocate(l, p, 100), MS_ERR_DOUBLE_FREE) << ms_last_error_text();
  ASSERT_MS_OK(ms_verify(ms));
  ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms));
  ms_destroy(ms);
}

}  // namespace
