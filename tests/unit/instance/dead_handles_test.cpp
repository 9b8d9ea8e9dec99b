// The set of the last 1 024 dead loader handles (src/instance/dead_handles.hpp), against a model,
// with real loader-sized objects from a slab allocator whose pages come and go.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "common/units.hpp"
#include "instance/dead_handles.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {
namespace {

constexpr size_t kObjectBytes = 128;  // a loader object
constexpr unsigned kTags[] = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14};

class DeadHandlesTest : public ::testing::Test {
 protected:
  SlabAllocator storage_{{.reserve_bytes = 64 * MiB, .return_at_once = false}};
  SlabAllocator objects_{{.reserve_bytes = 64 * MiB, .return_at_once = false}};
  DeadHandles dead_{storage_, objects_};
  std::deque<uintptr_t> model_;  // the last kRemembered deaths, oldest first

  bool in_model(uintptr_t h) const {
    return std::find(model_.begin(), model_.end(), h) != model_.end();
  }
  // What the metaspace does for a new loader: the first tag whose handle is not dead; an object
  // all of whose handles are dead is parked (kept) and another one tried.
  uintptr_t create() {
    for (;;) {
      void* o = objects_.allocate(kObjectBytes);
      if (o == nullptr) return 0;
      for (unsigned t : kTags) {
        uintptr_t h = reinterpret_cast<uintptr_t>(o) + t;
        bool dead = dead_.contains_allocated(h);
        EXPECT_EQ(dead, in_model(h)) << std::hex << h;
        if (!dead) return h;
      }
      parked_.push_back(o);
    }
  }
  std::vector<void*> parked_;
  void destroy(uintptr_t h) {
    ASSERT_TRUE(dead_.reserve(dead_.size() + 1));
    dead_.add(h);
    model_.push_back(h);
    if (model_.size() > DeadHandles::kRemembered) model_.pop_front();
    objects_.free(reinterpret_cast<void*>(h & ~uintptr_t{15}), kObjectBytes);
  }
};

// Loaders made and destroyed in random order, pages of objects emptied, reused and given back
// (purge: their marks read zeros and are made anew from the ring): the set agrees with the model
// of the last 1 024 deaths at every step, through the O(1) marks and through the exact scan.
TEST_F(DeadHandlesTest, RemembersTheLastOnesInOrderOfDeath) {
  std::mt19937_64 rng(11);
  std::vector<uintptr_t> live;
  for (size_t i = 0; i < 20000; i++) {
    // Grow to a few hundred live loaders (pages fill), shrink to a few (pages empty), repeat.
    size_t phase = (i / 3000) % 2;
    bool make = live.empty() || rng() % 100 < (phase == 0 ? 60u : 40u);
    if (make) {
      uintptr_t h = create();
      if (h != 0) live.push_back(h);
    } else {
      size_t k = rng() % live.size();
      uintptr_t h = live[k];
      live[k] = live.back();
      live.pop_back();
      destroy(h);
    }
    if (i % 1000 == 999) objects_.purge();  // empty pages go back: their marks with them
    ASSERT_EQ(dead_.size(), model_.size());
    if (i % 97 == 0) {
      ASSERT_TRUE(dead_.verify()) << ms_last_error_text();
      for (uintptr_t m : model_) ASSERT_TRUE(dead_.contains(m)) << i;
      for (uintptr_t h : live) ASSERT_FALSE(dead_.contains(h) || dead_.marked(h)) << i;
    }
  }
  EXPECT_EQ(dead_.capacity(), DeadHandles::kRemembered);
  // Exactly the last 1 024: the scan finds each, and nothing else in the objects' range.
  EXPECT_TRUE(dead_.contains(model_.front()));
  std::set<uintptr_t> dead(model_.begin(), model_.end());
  size_t hits = 0;
  const auto* base = reinterpret_cast<const char*>(objects_.range_base());
  for (uintptr_t h : dead) hits += dead_.contains(h) ? 1 : 0;
  EXPECT_EQ(hits, DeadHandles::kRemembered);
  EXPECT_FALSE(dead_.contains(reinterpret_cast<uintptr_t>(base) - 16));  // outside the range
  for (uintptr_t h : live) destroy(h);
  EXPECT_TRUE(dead_.verify()) << ms_last_error_text();
}

// The marks live in the objects' pages and survive a page that empties and comes back committed;
// a page the kernel took back gets them from the ring; forgetting a handle while its page is
// given back leaves nothing behind.
TEST_F(DeadHandlesTest, MarksFollowTheirPageThroughEmptyAndGivenBack) {
  uintptr_t first = create();
  ASSERT_NE(first, 0u);
  uintptr_t object = first & ~uintptr_t{15};
  destroy(first);  // the page is empty now, kept committed
  uintptr_t again = create();
  ASSERT_EQ(again & ~uintptr_t{15}, object) << "the slab hands the freed object out first";
  EXPECT_NE(again, first);
  EXPECT_TRUE(dead_.marked(first));  // the page's marks stayed
  destroy(again);
  EXPECT_GT(objects_.purge(), 0u);  // given back: its marks read zeros
  EXPECT_FALSE(DeadHandles::page_stamped(reinterpret_cast<void*>(object)));
  uintptr_t third = create();  // same place: marks made anew from the ring
  ASSERT_EQ(third & ~uintptr_t{15}, object);
  EXPECT_NE(third, first);
  EXPECT_NE(third, again);
  EXPECT_TRUE(dead_.marked(first) && dead_.marked(again));
  EXPECT_TRUE(dead_.verify()) << ms_last_error_text();
  destroy(third);
  EXPECT_GT(objects_.purge(), 0u);
  // 1 024 deaths elsewhere forget all three while their page is given back.
  std::vector<uintptr_t> keep;  // one live object keeps the others' page from being reused
  for (size_t i = 0; i < DeadHandles::kRemembered; i++) {
    uintptr_t h = create();
    ASSERT_NE(h, 0u);
    if ((h & ~uintptr_t{15}) == object) {
      keep.push_back(h);
      h = create();
      ASSERT_NE(h, 0u);
    }
    destroy(h);
  }
  EXPECT_FALSE(dead_.contains(first) || dead_.contains(again) || dead_.contains(third));
  EXPECT_TRUE(dead_.verify()) << ms_last_error_text();
  for (uintptr_t h : keep) destroy(h);
  EXPECT_TRUE(dead_.verify()) << ms_last_error_text();
}

TEST_F(DeadHandlesTest, GrowsOnlyAsFarAsReservedAndGivesItsMemoryBack) {
  size_t before = storage_.committed_bytes();
  {
    SlabAllocator objects{{.reserve_bytes = 64 * MiB, .return_at_once = false}};
    DeadHandles dead(storage_, objects);
    EXPECT_EQ(dead.capacity(), 0u);
    EXPECT_FALSE(dead.contains(reinterpret_cast<uintptr_t>(objects.range_base()) + 4096));
    ASSERT_TRUE(dead.reserve(3));
    EXPECT_EQ(dead.capacity(), DeadHandles::kInlineCapacity);  // in the object itself
    EXPECT_EQ(storage_.committed_bytes(), before);
    std::vector<uintptr_t> added;
    void* o = objects.allocate(kObjectBytes);
    ASSERT_FALSE(dead.contains_allocated(reinterpret_cast<uintptr_t>(o)));
    dead.add(reinterpret_cast<uintptr_t>(o));
    added.push_back(reinterpret_cast<uintptr_t>(o));
    EXPECT_TRUE(dead.contains_allocated(reinterpret_cast<uintptr_t>(o)));
    EXPECT_FALSE(dead.contains_allocated(reinterpret_cast<uintptr_t>(o) + 1));
    objects.free(o, kObjectBytes);
    ASSERT_TRUE(dead.reserve(DeadHandles::kInlineCapacity + 1));
    EXPECT_EQ(dead.capacity(), 128u);  // a shared-page object (512 bytes)
    EXPECT_GT(storage_.committed_bytes(), before);
    for (uintptr_t h : added) EXPECT_TRUE(dead.contains(h));
    ASSERT_TRUE(dead.reserve(100000));  // never more than it remembers
    EXPECT_EQ(dead.capacity(), DeadHandles::kRemembered);
    EXPECT_EQ(dead.bytes(), DeadHandles::kRemembered * 4);  // one page
    for (uintptr_t h : added) EXPECT_TRUE(dead.contains(h));
    EXPECT_TRUE(dead.verify()) << ms_last_error_text();
  }
  EXPECT_EQ(storage_.live_allocations(), 0u);
}

// The side bytes cost a loader object's slab no room: 31 objects of 128 bytes to a 4 KiB page,
// with or without them.
TEST(SlabSideBytes, CostLoaderObjectsNoRoom) {
  if (os::page_size() != 4096) GTEST_SKIP() << "measured for 4 KiB pages";
  SlabAllocator plain{{.reserve_bytes = 16 * MiB, .return_at_once = false}};
  SlabAllocator with{{.reserve_bytes = 16 * MiB, .return_at_once = false}};
  with.set_side_bytes(DeadHandles::kSideBytes);
  EXPECT_EQ(plain.slab_capacity(kObjectBytes), 31u);
  EXPECT_EQ(with.slab_capacity(kObjectBytes), 31u);
  // Every object's side bytes lie behind the last object and before the stamp, none shared.
  std::vector<void*> objects;
  for (int i = 0; i < 31; i++) objects.push_back(with.allocate(kObjectBytes));
  auto* page_end = reinterpret_cast<unsigned char*>(SlabAllocator::side_stamp(objects[0])) + 8;
  std::set<unsigned char*> sides;
  for (void* o : objects) {
    ASSERT_EQ(SlabAllocator::side_stamp(o), SlabAllocator::side_stamp(objects[0]));
    unsigned char* side = SlabAllocator::side_of(o, DeadHandles::kSideBytes);
    EXPECT_GE(side, static_cast<unsigned char*>(objects.back()) + kObjectBytes);
    EXPECT_LE(side + DeadHandles::kSideBytes, page_end - 8);
    sides.insert(side);
  }
  EXPECT_EQ(sides.size(), 31u);
  EXPECT_EQ(with.live_allocations(), 31u);
  for (void* o : objects) with.free(o, kObjectBytes);
}

}  // namespace
}  // namespace metaspace
