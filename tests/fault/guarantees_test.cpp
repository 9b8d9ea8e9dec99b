// One test per row of docs/guarantees.md: what each kind of bad call gets, in normal and in
// checked mode. Rows marked "undefined" there are not exercised (they would corrupt the state).
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

#include "os/fault_injection.hpp"

extern "C" {
void* msfuzz_allocate_raw(ms_loader_t* loader, int space, size_t bytes);
ms_loader_t* msfuzz_loader_create_raw(ms_metaspace_t* ms, int kind, unsigned flags);
ms_metaspace_t* msfuzz_create_raw(const ms_settings_t* settings, int reclaim);
}

namespace {

constexpr size_t kFence = 24;

class Guarantees : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { open(GetParam(), MS_RECLAIM_BALANCED); }
  void TearDown() override {
    if (ms_ != nullptr) ms_destroy(ms_);
  }
  void open(int checked, ms_reclaim_t reclaim) {
    if (ms_ != nullptr) ms_destroy(ms_);
    ms_settings_t s;
    ms_settings_init(&s);
    s.checked = checked;
    s.reclaim = reclaim;
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr);
    l_ = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l_, nullptr);
  }
  bool checked() const { return GetParam() != 0; }
  ms_metaspace_t* ms_ = nullptr;
  ms_loader_t* l_ = nullptr;
};

#define EXPECT_ERR(call, err)                                  \
  do {                                                         \
    ms_error_t e_ = (call);                                    \
    EXPECT_EQ(e_, err) << ms_error_name(e_);                   \
    EXPECT_EQ(ms_last_error(), err) << ms_last_error_text();   \
  } while (0)

#define EXPECT_NULL_ERR(call, err)                             \
  do {                                                         \
    EXPECT_EQ((call), nullptr);                                \
    EXPECT_EQ(ms_last_error(), err) << ms_last_error_text();   \
  } while (0)

TEST_P(Guarantees, NullHandles) {
  ms_stats_t st;
  ms_loader_stats_t ls;
  int x = 0;
  EXPECT_NULL_ERR(ms_loader_create(nullptr, MS_LOADER_BOOT, 0), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(ms_allocate(nullptr, MS_SPACE_NONCLASS, 8), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_deallocate(nullptr, &x, 8), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_loader_destroy(nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_loader_get_stats(nullptr, &ls), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_loader_get_stats(l_, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_get_stats(nullptr, &st), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_get_stats(ms_, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_ERR(ms_verify(nullptr), MS_ERR_INVALID_ARGUMENT);
  ms_purge(nullptr);                             // no-op
  ms_set_gc_threshold(nullptr, 1, nullptr, nullptr);  // no-op
  ms_destroy(nullptr);                           // no-op
  ms_settings_init(nullptr);                     // no-op
  ms_metaspace_t* defaults = ms_create(nullptr);  // NULL settings: the defaults
  ASSERT_NE(defaults, nullptr);
  ms_destroy(defaults);
  EXPECT_ERR(ms_deallocate(l_, nullptr, 8), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_encode_class(ms_, nullptr), 0u);
  EXPECT_EQ(ms_decode_class(ms_, 0), nullptr);
}

// Readable memory that is not a loader, and not zeros either: the out-of-line calls check the
// loader's magic word before anything else. (The inline ms_allocate is covered where its fast
// path is defined; here it is called as ms_allocate_slow.)
TEST_P(Guarantees, ForeignHandleIsRefused) {
  struct Bump {
    char* begin;
    char* end;
    uint64_t count;
    size_t fit;
  };
  alignas(64) static char arena[4096];
  alignas(64) static unsigned char pattern[4096];
  std::memset(pattern, 0xAB, sizeof(pattern));
  alignas(64) static Bump lookalike[64];
  for (Bump& b : lookalike) b = {arena, arena + sizeof(arena), 0, 0};
  std::vector<ms_loader_t*> fakes = {
      reinterpret_cast<ms_loader_t*>(pattern), reinterpret_cast<ms_loader_t*>(lookalike),
      reinterpret_cast<ms_loader_t*>(ms_)};  // the metaspace itself is no loader either
  ms_settings_t before;
  ms_settings_init(&before);
  for (ms_loader_t* fake : fakes) {
    std::vector<unsigned char> copy(reinterpret_cast<unsigned char*>(fake),
                                    reinterpret_cast<unsigned char*>(fake) + 256);
    int x = 0;
    ms_loader_stats_t ls;
    EXPECT_NULL_ERR(ms_allocate_slow(fake, MS_SPACE_NONCLASS, 8), MS_ERR_INVALID_ARGUMENT);
    EXPECT_NULL_ERR(ms_allocate_slow(fake, MS_SPACE_CLASS, 64), MS_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(ms_deallocate(fake, &x, 8), MS_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(ms_loader_get_stats(fake, &ls), MS_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(ms_loader_destroy(fake), MS_ERR_INVALID_ARGUMENT);
    // Nothing was written through the fake handle.
    EXPECT_EQ(std::memcmp(copy.data(), fake, copy.size()), 0);
  }
  EXPECT_EQ(lookalike[0].begin, arena);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  EXPECT_NE(ms_allocate(l_, MS_SPACE_NONCLASS, 64), nullptr);
}

TEST_P(Guarantees, SizeZeroAndHugeSizes) {
  EXPECT_NULL_ERR(ms_allocate(l_, MS_SPACE_NONCLASS, 0), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(ms_allocate(l_, MS_SPACE_CLASS, 0), MS_ERR_INVALID_ARGUMENT);
  void* p = ms_allocate(l_, MS_SPACE_NONCLASS, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_ERR(ms_deallocate(l_, p, 0), MS_ERR_INVALID_ARGUMENT);
  size_t root = 4u << 20;
  size_t largest = checked() ? root - kFence : root;
  for (size_t n : {largest + 1, root + 1, size_t{1} << 40, SIZE_MAX - 7, SIZE_MAX}) {
    EXPECT_NULL_ERR(ms_allocate(l_, MS_SPACE_NONCLASS, n), MS_ERR_TOO_LARGE);
    EXPECT_NULL_ERR(ms_allocate(l_, MS_SPACE_CLASS, n), MS_ERR_TOO_LARGE);
  }
  // The largest block is served (checked mode: the fence must fit the root chunk as well).
  void* big = ms_allocate(l_, MS_SPACE_NONCLASS, largest);
  ASSERT_NE(big, nullptr) << ms_last_error_text();
  static_cast<char*>(big)[largest - 1] = 1;
  EXPECT_EQ(ms_deallocate(l_, p, 16), MS_OK);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

TEST_P(Guarantees, BadEnumsFlagsAndSettings) {
  // From C, where any int is a value of an enum type.
  EXPECT_NULL_ERR(msfuzz_allocate_raw(l_, 2, 8), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(msfuzz_allocate_raw(l_, -1, 8), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(msfuzz_loader_create_raw(ms_, 3, 0), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(msfuzz_loader_create_raw(ms_, -1, 0), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(ms_loader_create(ms_, MS_LOADER_STANDARD, 2u), MS_ERR_INVALID_ARGUMENT);
  ms_settings_t s;
  ms_settings_init(&s);
  EXPECT_NULL_ERR(msfuzz_create_raw(&s, 3), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NULL_ERR(msfuzz_create_raw(&s, -5), MS_ERR_INVALID_ARGUMENT);
  s.class_alignment_bytes = 24;
  EXPECT_NULL_ERR(ms_create(&s), MS_ERR_INVALID_ARGUMENT);
  ms_settings_init(&s);
  s.max_committed_bytes = 1;
  EXPECT_NULL_ERR(ms_create(&s), MS_ERR_INVALID_ARGUMENT);
}

TEST_P(Guarantees, ForeignPointersAreNotOwned) {
  ms_loader_t* other = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
  char* mine = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 64));
  char* theirs = static_cast<char*>(ms_allocate(other, MS_SPACE_CLASS, 64));
  ASSERT_TRUE(mine != nullptr && theirs != nullptr);
  int stack = 0;
  std::vector<char> heap(64);
  EXPECT_ERR(ms_deallocate(l_, theirs, 64), MS_ERR_NOT_OWNED);   // another loader's block
  EXPECT_ERR(ms_deallocate(other, mine, 64), MS_ERR_NOT_OWNED);
  EXPECT_ERR(ms_deallocate(l_, &stack, 8), MS_ERR_NOT_OWNED);
  EXPECT_ERR(ms_deallocate(l_, heap.data(), 64), MS_ERR_NOT_OWNED);
  EXPECT_ERR(ms_deallocate(l_, mine + 3, 8), MS_ERR_NOT_OWNED);   // misaligned
  EXPECT_ERR(ms_deallocate(l_, mine + 64 + 4096, 8), MS_ERR_NOT_OWNED);  // not handed out yet
  EXPECT_ERR(ms_deallocate(l_, mine, 1u << 20), MS_ERR_NOT_OWNED);  // runs past the handed-out part
  // Another metaspace's block.
  ms_metaspace_t* ms2 = ms_create(nullptr);
  ms_loader_t* l2 = ms_loader_create(ms2, MS_LOADER_STANDARD, 0);
  void* far = ms_allocate(l2, MS_SPACE_NONCLASS, 64);
  EXPECT_ERR(ms_deallocate(l_, far, 64), MS_ERR_NOT_OWNED);
  ms_destroy(ms2);
  // Nothing changed: both blocks can still be freed.
  EXPECT_EQ(ms_deallocate(l_, mine, 64), MS_OK);
  EXPECT_EQ(ms_deallocate(other, theirs, 64), MS_OK);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

TEST_P(Guarantees, CheckedModeDetectsDoubleInteriorAndWrongSizeFrees) {
  if (!checked()) GTEST_SKIP() << "undefined outside checked mode";
  char* a = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 100));
  char* b = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 100));
  ASSERT_TRUE(a != nullptr && b != nullptr);
  EXPECT_ERR(ms_deallocate(l_, a + 16, 84), MS_ERR_OVERWRITE);  // interior: no fence there
  EXPECT_ERR(ms_deallocate(l_, a, 96), MS_ERR_OVERWRITE);       // wrong size (a word short)
  EXPECT_ERR(ms_deallocate(l_, a, 200), MS_ERR_OVERWRITE);      // wrong size (too long)
  EXPECT_EQ(ms_deallocate(l_, a, 97), MS_OK);  // same 8-byte words as 100: the same block
  EXPECT_ERR(ms_deallocate(l_, a, 100), MS_ERR_DOUBLE_FREE);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  // The block (104 bytes; its old fence stays consumed) was filed once: a request that fits it
  // with a new fence gets it, a second one does not.
  char* again = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 104 - kFence));
  EXPECT_EQ(again, a);
  EXPECT_NE(ms_allocate(l_, MS_SPACE_NONCLASS, 104 - kFence), a);
  EXPECT_EQ(ms_deallocate(l_, b, 100), MS_OK);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

TEST_P(Guarantees, UseAfterDestroy) {
  ms_loader_t* dead = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
  void* p = ms_allocate(dead, MS_SPACE_NONCLASS, 32);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(ms_loader_destroy(dead), MS_OK);
  ms_loader_stats_t ls;
  EXPECT_ERR(ms_loader_destroy(dead), MS_ERR_DESTROYED);
  EXPECT_NULL_ERR(ms_allocate(dead, MS_SPACE_NONCLASS, 32), MS_ERR_DESTROYED);
  EXPECT_NULL_ERR(ms_allocate(dead, MS_SPACE_CLASS, 32), MS_ERR_DESTROYED);
  EXPECT_ERR(ms_deallocate(dead, p, 32), MS_ERR_DESTROYED);
  EXPECT_ERR(ms_loader_get_stats(dead, &ls), MS_ERR_DESTROYED);
  // The handle stays dead while fewer than 1024 loaders died after it.
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(ms_loader_destroy(ms_loader_create(ms_, MS_LOADER_MICRO, 0)), MS_OK);
  }
  EXPECT_ERR(ms_loader_destroy(dead), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

TEST_P(Guarantees, CheckedModeDetectsOverruns) {
  if (!checked()) GTEST_SKIP() << "not detected outside checked mode";
  for (size_t words : {size_t{1}, size_t{8}}) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    char* a = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
    char* b = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
    ASSERT_EQ(b, a + 64 + kFence);  // blocks follow each other, fence in between
    ASSERT_EQ(ms_verify(ms_), MS_OK);
    std::memset(a + 64, 0x41, words * 8);  // 1 word: into a's fence; 8: through it into b
    EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
    EXPECT_ERR(ms_deallocate(l, a, 64), MS_ERR_OVERWRITE);  // not filed
    // The loader dies all the same and reports the overrun; then all is well again.
    EXPECT_ERR(ms_loader_destroy(l), MS_ERR_OVERWRITE);
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }
  // Class space, with the fence behind the block before the alignment gap.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  char* k = static_cast<char*>(ms_allocate(l, MS_SPACE_CLASS, 40));
  k[40] = 0;
  EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
  EXPECT_ERR(ms_loader_destroy(l), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

TEST_P(Guarantees, FreedBlocksAreZappedAndCheckedModeFindsLaterWritesOnReuse) {
  char* a = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 4096));
  ASSERT_NE(a, nullptr);
  std::memset(a, 0x11, 4096);
  ASSERT_EQ(ms_deallocate(l_, a, 4096), MS_OK);
  // Checked mode zaps the freed block; normal mode leaves it as it was (no cost on free).
  EXPECT_EQ(static_cast<uint8_t>(a[4095]), checked() ? 0xF3 : 0x11);
  a[4000] = 0x22;  // beyond the free-list links: ms_verify does not read the pattern
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  size_t again = checked() ? 4096 - kFence : 4096;
  if (!checked()) {
    // The block is handed out again as it is, write included.
    char* b = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, again));
    EXPECT_EQ(b, a);
    EXPECT_EQ(a[4000], 0x22);
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    return;
  }
  // Checked mode: the reuse that would hand it out finds the write and refuses, naming the block.
  EXPECT_NULL_ERR(ms_allocate(l_, MS_SPACE_NONCLASS, again), MS_ERR_OVERWRITE);
  EXPECT_NE(std::strstr(ms_last_error_text(), "written after it was freed"), nullptr)
      << ms_last_error_text();
  // The loader goes on from its chunks, never handing the damaged block out.
  char* c = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, again));
  ASSERT_NE(c, nullptr) << ms_last_error_text();
  EXPECT_TRUE(c >= a + 4096 + kFence || c + again + kFence <= a);
  EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
  EXPECT_EQ(ms_loader_destroy(l_), MS_OK) << ms_last_error_text();
  l_ = nullptr;
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
}

// A write into a freed block, met by the allocation that would reuse it (checked mode): over the
// list link of a bin block, over a tree block's node, and over the zapped rest of either. The
// allocation gets NULL and MS_ERR_OVERWRITE instead of following the link (it crashed on the
// second allocation); the loader goes on without reusing freed blocks, frees are still checked
// (a double free is still refused), ms_verify keeps reporting the overwrite until the loader dies.
TEST_P(Guarantees, CheckedModeRefusesToReuseAFreeBlockWrittenAfterItsFree) {
  if (!checked()) GTEST_SKIP() << "undefined outside checked mode";
  struct Case {
    ms_space_t space;
    size_t bytes;  // 64: a bin block; 512 and 1024: tree blocks (checked mode has no medium bins)
    size_t offset;
    uint8_t flip;
    const char* what;
  };
  const Case cases[] = {{MS_SPACE_NONCLASS, 64, 0, 0x40, "bin block's link"},
                        {MS_SPACE_NONCLASS, 64, 0, 0x01, "bin block's link tag (as a chunk tail)"},
                        {MS_SPACE_NONCLASS, 64, 20, 0x01, "bin block's zapped rest"},
                        {MS_SPACE_NONCLASS, 1024, 0, 0x40, "tree block's node canary"},
                        {MS_SPACE_NONCLASS, 1024, 16, 0x40, "tree block's node link"},
                        {MS_SPACE_NONCLASS, 1024, 900, 0x01, "tree block's zapped rest"},
                        {MS_SPACE_CLASS, 512, 0, 0x40, "class tree block's node canary"},
                        {MS_SPACE_CLASS, 512, 100, 0x01, "class tree block's zapped rest"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    // A standard loader's first Klasses lie in shared chunks and are never reused: past them.
    for (int i = 0; k.space == MS_SPACE_CLASS && i < 40; i++) {
      ASSERT_NE(ms_allocate(l, k.space, k.bytes), nullptr);
    }
    char* a = static_cast<char*>(ms_allocate(l, k.space, k.bytes));
    char* b = static_cast<char*>(ms_allocate(l, k.space, k.bytes));
    char* keep = static_cast<char*>(ms_allocate(l, k.space, k.bytes));
    ASSERT_TRUE(a != nullptr && b != nullptr && keep != nullptr);
    std::memset(keep, 0x5C, k.bytes);
    ASSERT_EQ(ms_deallocate(l, a, k.bytes), MS_OK);
    ASSERT_EQ(ms_deallocate(l, b, k.bytes), MS_OK);  // b is taken first (the bin's head; a
                                                     // list member of a's tree node)
    b[k.offset] ^= k.flip;
    EXPECT_NULL_ERR(ms_allocate(l, k.space, k.bytes - kFence), MS_ERR_OVERWRITE);
    for (int i = 0; i < 3; i++) {
      char* c = static_cast<char*>(ms_allocate(l, k.space, k.bytes - kFence));
      ASSERT_NE(c, nullptr) << ms_last_error_text();
      for (const char* freed : {a, b, keep}) {
        EXPECT_TRUE(c >= freed + k.bytes + kFence || c + k.bytes <= freed);
      }
      std::memset(c, 0x77, k.bytes - kFence);
    }
    for (size_t i = 0; i < k.bytes; i++) ASSERT_EQ(static_cast<uint8_t>(keep[i]), 0x5C);
    EXPECT_EQ(ms_deallocate(l, keep, k.bytes), MS_OK) << ms_last_error_text();
    EXPECT_ERR(ms_deallocate(l, keep, k.bytes), MS_ERR_DOUBLE_FREE);
    EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
    EXPECT_EQ(ms_loader_destroy(l), MS_OK) << ms_last_error_text();
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }
}

// The free list lives in the freed blocks; a write over a freed block's
// link made ms_verify chase it (SEGV). Checked mode reports it as an overwrite.
TEST_P(Guarantees, CheckedModeReportsAnOverwrittenFreeListLink) {
  if (!checked()) GTEST_SKIP() << "undefined outside checked mode";
  for (size_t n : {size_t{64}, size_t{1024}}) {  // a bin block and a tree block
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    char* a = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, n));
    char* b = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, n));
    ASSERT_TRUE(a != nullptr && b != nullptr);
    ASSERT_EQ(ms_deallocate(l, a, n), MS_OK);
    ASSERT_EQ(ms_deallocate(l, b, n), MS_OK);  // b's first word links to a
    b[0] ^= 0x40;
    b[5] = 0x7F;  // far outside anything mapped by this loader
    EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
    EXPECT_EQ(ms_loader_destroy(l), MS_OK) << ms_last_error_text();
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }
}

// A double free in normal mode is undefined, but ms_verify must still
// terminate (it walked a self-linked list forever, holding every lock) and say CORRUPTED.
TEST_P(Guarantees, VerifyTerminatesAfterANormalModeDoubleFree) {
  if (checked()) GTEST_SKIP() << "checked mode refuses the double free";
  for (size_t n : {size_t{64}, size_t{1024}}) {
    EXPECT_EXIT(
        {
          alarm(20);  // a hang is a failure, not a stuck test run
          ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
          char* a = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, n));
          ms_allocate(l, MS_SPACE_NONCLASS, n);
          ms_deallocate(l, a, n);
          ms_deallocate(l, a, n);
          for (int i = 0; i < 3; i++) ms_allocate(l, MS_SPACE_NONCLASS, n);
          ms_stats_t st;
          ms_get_stats(ms_, &st);  // garbage allowed, a hang is not
          ms_error_t e = ms_verify(ms_);
          std::fprintf(stderr, "verify: %s %s\n", ms_error_name(e), ms_last_error_text());
          std::exit(e == MS_ERR_CORRUPTED ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "verify: corrupted")
        << n << " bytes";
  }
}

// One byte past a 61-byte request lies in the rounding slack (the block is
// 64 bytes); checked mode fills the slack with a pattern and checks it with the fence.
TEST_P(Guarantees, CheckedModeDetectsOverrunsIntoTheRoundingSlack) {
  if (!checked()) GTEST_SKIP() << "not detected outside checked mode";
  for (size_t req : {size_t{61}, size_t{57}, size_t{63}}) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    char* d = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, req));
    ASSERT_NE(d, nullptr);
    std::memset(d, 0x11, req);  // all of the request is the runtime's
    ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    d[req] = 0x41;
    EXPECT_ERR(ms_verify(ms_), MS_ERR_OVERWRITE);
    EXPECT_ERR(ms_deallocate(l, d, req), MS_ERR_OVERWRITE);
    EXPECT_ERR(ms_loader_destroy(l), MS_ERR_OVERWRITE);
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  }
  // Freeing with any size of the same words is still the same block.
  char* d = static_cast<char*>(ms_allocate(l_, MS_SPACE_NONCLASS, 61));
  std::memset(d, 0x22, 61);
  EXPECT_EQ(ms_deallocate(l_, d, 64), MS_OK);
}

TEST_P(Guarantees, DeadLoaderMemoryIsZappedAndTakenAway) {
  // A live loader keeps the node mapped (a node with nothing in it would be unmapped by purge).
  ASSERT_NE(ms_allocate(l_, MS_SPACE_NONCLASS, 64), nullptr);
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_BOOT, 0);  // boot: large chunks at once
  char* p = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 256u << 10));
  char* q = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 64));
  ASSERT_TRUE(p != nullptr && q != nullptr);
  std::memset(p, 0x11, 256u << 10);
  ms_stats_t before;
  ASSERT_EQ(ms_get_stats(ms_, &before), MS_OK);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  if (!checked()) {
    // Normal mode, balanced: the memory stays committed (stale data) until ms_purge gives the
    // free chunks' whole granules back; then it reads as zeros and is no longer counted.
    EXPECT_EQ(p[1000], 0x11);
    ms_purge(ms_);
    ms_stats_t after;
    ASSERT_EQ(ms_get_stats(ms_, &after), MS_OK);
    EXPECT_LE(after.total.committed_bytes + (256u << 10), before.total.committed_bytes);
    EXPECT_EQ(p[1000], 0) << "uncommitted memory reads as zeros";
    EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    return;
  }
  // Checked mode: whole free granules are uncommitted and protected at once.
  EXPECT_DEATH({ volatile char c = p[1000]; (void)c; }, "");
}

TEST_P(Guarantees, CheckedModeNoReclaimZapsDeadMemory) {
  if (!checked()) GTEST_SKIP();
  open(1, MS_RECLAIM_NONE);  // no merging, no uncommitting: the memory stays, zapped
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  char* p = static_cast<char*>(ms_allocate(l, MS_SPACE_NONCLASS, 128));
  std::memset(p, 0x11, 128);
  ASSERT_EQ(ms_loader_destroy(l), MS_OK);
  EXPECT_EQ(static_cast<uint8_t>(p[100]), 0xD5);
}

TEST_P(Guarantees, CommitAndReserveFailuresAreReported) {
  using metaspace::os::FaultPoint;
  using metaspace::os::inject_fault;
  inject_fault(FaultPoint::kReserve, 1);
  ms_metaspace_t* none = ms_create(nullptr);
  inject_fault(FaultPoint::kReserve, 0);
  if (none != nullptr) {
    ms_destroy(none);
    GTEST_SKIP() << "fault injection not compiled in";
  }
  EXPECT_EQ(ms_last_error(), MS_ERR_RESERVE_FAILED);
  // A fresh loader needs a chunk: the first commit fails.
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_BOOT, 0);
  inject_fault(FaultPoint::kCommit, 1);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 8u << 10);
  inject_fault(FaultPoint::kCommit, 0);
  // Nothing was committed in this metaspace before: the first commit (checked mode: of the
  // granule run; normal mode: opening the root chunk area) is the one that fails.
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_COMMIT_FAILED) << ms_last_error_text();
  EXPECT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
  EXPECT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 8u << 10), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Modes, Guarantees, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param ? "Checked" : "Normal"; });

}  // namespace
