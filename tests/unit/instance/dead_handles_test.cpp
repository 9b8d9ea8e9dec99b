// The set of the last 1 024 dead loader handles (src/instance/dead_handles.hpp), against a model.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "common/error.hpp"
#include "common/units.hpp"
#include "instance/dead_handles.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {
namespace {

class DeadHandlesTest : public ::testing::Test {
 protected:
  SlabAllocator slabs_{{.reserve_bytes = 64 * MiB, .return_at_once = false}};
};

// Handles as the metaspace makes them: 16-byte aligned objects above the range's first page,
// plus a tag of 0..14 (not 7).
constexpr uintptr_t kBase = 0x7f0000000000u;
uintptr_t handle(uintptr_t object, unsigned tag) { return kBase + 4096 + object * 144 + tag; }

TEST_F(DeadHandlesTest, RemembersTheLastOnesInOrderOfDeath) {
  DeadHandles dead(slabs_, kBase);
  std::deque<uintptr_t> model;
  std::mt19937_64 rng(11);
  for (size_t i = 0; i < 5000; i++) {
    // Room for one more, as the metaspace reserves it when a loader is made.
    ASSERT_TRUE(dead.reserve(dead.size() + 1));
    uintptr_t h;
    do {
      h = handle(rng() % 600, static_cast<unsigned>(rng() % 14));  // slots reused: collisions
    } while (std::find(model.begin(), model.end(), h) != model.end());
    dead.add(h);
    model.push_back(h);
    if (model.size() > DeadHandles::kRemembered) model.pop_front();
    ASSERT_EQ(dead.size(), model.size());
    if (i % 97 == 0 || i < 40) {
      ASSERT_TRUE(dead.verify()) << ms_last_error_text();
      for (uintptr_t m : model) ASSERT_TRUE(dead.contains(m)) << i;
    }
    ASSERT_TRUE(dead.contains(h));
  }
  EXPECT_EQ(dead.capacity(), DeadHandles::kRemembered);
  // Exactly the last 1 024: the one before them is forgotten, the oldest kept one is not.
  EXPECT_TRUE(dead.contains(model.front()));
  size_t hits = 0;
  for (uintptr_t o = 0; o < 600; o++) {
    for (unsigned t = 0; t < 15; t++) hits += dead.contains(handle(o, t)) ? 1 : 0;
  }
  EXPECT_EQ(hits, DeadHandles::kRemembered);
  EXPECT_TRUE(dead.verify()) << ms_last_error_text();
}

TEST_F(DeadHandlesTest, GrowsOnlyAsFarAsReservedAndGivesItsMemoryBack) {
  size_t before = slabs_.committed_bytes();
  {
    DeadHandles dead(slabs_, kBase);
    EXPECT_EQ(dead.capacity(), 0u);
    EXPECT_FALSE(dead.contains(handle(1, 0)));
    EXPECT_FALSE(dead.contains(kBase - 16));  // outside the range: never remembered
    EXPECT_FALSE(dead.contains(kBase + (uintptr_t{1} << 33)));
    ASSERT_TRUE(dead.reserve(3));
    EXPECT_EQ(dead.capacity(), 16u);  // the smallest: 128 bytes, in the object itself
    for (unsigned i = 0; i < 16; i++) dead.add(handle(i, 0));
    ASSERT_TRUE(dead.reserve(17));
    EXPECT_EQ(dead.capacity(), 32u);
    for (unsigned i = 0; i < 16; i++) EXPECT_TRUE(dead.contains(handle(i, 0))) << i;
    ASSERT_TRUE(dead.reserve(100000));  // never more than it remembers
    EXPECT_EQ(dead.capacity(), DeadHandles::kRemembered);
    EXPECT_EQ(dead.bytes(), DeadHandles::kRemembered * 8);
    for (unsigned i = 0; i < 16; i++) EXPECT_TRUE(dead.contains(handle(i, 0))) << i;
    EXPECT_TRUE(dead.verify()) << ms_last_error_text();
    EXPECT_GT(slabs_.committed_bytes(), before);
  }
  EXPECT_EQ(slabs_.live_allocations(), 0u);
}

TEST_F(DeadHandlesTest, ForgettingTheOldestKeepsEveryProbeRunIntact) {
  // Handles that share home slots (same object, every tag): deleting from the middle of a probe
  // run must leave the later entries reachable (backward shift).
  DeadHandles dead(slabs_, kBase);
  ASSERT_TRUE(dead.reserve(DeadHandles::kRemembered));
  std::deque<uintptr_t> model;
  for (unsigned round = 0; round < 3; round++) {
    for (uintptr_t o = 0; o < 100; o++) {
      for (unsigned t = 0; t < 14; t++) {
        uintptr_t h = handle(o + 1000 * round, t < 7 ? t : t + 1);
        dead.add(h);
        model.push_back(h);
        if (model.size() > DeadHandles::kRemembered) model.pop_front();
      }
      ASSERT_TRUE(dead.verify()) << ms_last_error_text();
    }
  }
  for (uintptr_t m : model) ASSERT_TRUE(dead.contains(m));
  EXPECT_EQ(dead.size(), DeadHandles::kRemembered);
}

}  // namespace
}  // namespace metaspace
