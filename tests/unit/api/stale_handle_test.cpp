// A destroyed loader's object is reused at once, under another handle (its tag,
// include/metaspace/metaspace.h), and the handles of the last 1 024 dead loaders keep getting
// MS_ERR_DESTROYED from every call (docs/guarantees.md) without touching the loader that lives in
// their object now. Before, the promise was kept by not reusing the objects (a quarantine of 1 024
// dead ones), which pinned their slab pages.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "instance/dead_handles.hpp"
#include "os/fault_injection.hpp"
#include "support/api_fixtures.hpp"
#include "support/ms_assertions.hpp"

namespace {

uintptr_t object_of(ms_loader_t* l) {
  return reinterpret_cast<uintptr_t>(l) & ~MS__HANDLE_TAG_MASK;
}

// Every call a runtime could make with a dead handle says MS_ERR_DESTROYED. `block`: one of the
// dead loader's blocks (its memory may be another loader's now).
void expect_destroyed(ms_loader_t* dead, void* block, size_t bytes) {
  ms_loader_stats_t ls;
  EXPECT_EQ(ms_allocate(dead, MS_SPACE_NONCLASS, 16), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  EXPECT_EQ(ms_allocate(dead, MS_SPACE_CLASS, 600), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  EXPECT_EQ(ms_alloc(dead, MS_SPACE_NONCLASS, 16), nullptr);  // the exported path
  EXPECT_EQ(ms_last_error(), MS_ERR_DESTROYED) << ms_last_error_text();
  if (block != nullptr) EXPECT_EQ(ms_deallocate(dead, block, bytes), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_loader_get_stats(dead, &ls), MS_ERR_DESTROYED);
  EXPECT_EQ(ms_loader_destroy(dead), MS_ERR_DESTROYED);
}

class StaleHandles : public metaspace::test::MetaspaceByMode {
 protected:
  size_t nonclass_overhead() {
    ms_usage_t u{};
    u.size = sizeof u;
    EXPECT_EQ(ms_get_usage(ms_, &u), MS_OK) << ms_last_error_text();
    return u.space[MS_SPACE_NONCLASS].overhead_bytes;
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, StaleHandles, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param ? "checked" : "normal"; });

TEST_P(StaleHandles, TheObjectLivesOnUnderAnotherHandle) {
  ms_loader_t* first = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(first, nullptr);
  void* old_block = ms_allocate(first, MS_SPACE_NONCLASS, 64);
  ASSERT_NE(old_block, nullptr);
  ASSERT_MS_OK(ms_loader_destroy(first));
  ms_loader_t* second = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(object_of(second), object_of(first)) << "the dead loader's object is reused at once";
  EXPECT_NE(second, first);
  // The new loader, with blocks and (normal mode) an open inline path and freed blocks.
  std::vector<void*> blocks;
  for (int i = 0; i < 20; i++) {
    void* p = ms_allocate(second, MS_SPACE_NONCLASS, 48);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x2B, 48);
    blocks.push_back(p);
  }
  ASSERT_MS_OK(ms_deallocate(second, blocks[3], 48));
  ms_loader_stats_t before = metaspace::test::loader_stats(second);
  expect_destroyed(first, old_block, 64);
  // Also with the new loader's own blocks: a stale handle must not file them.
  EXPECT_EQ(ms_deallocate(first, blocks[5], 48), MS_ERR_DESTROYED);
  ms_loader_stats_t after = metaspace::test::loader_stats(second);
  EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0) << "the stale calls changed the live loader";
  ASSERT_MS_OK(ms_verify(ms_));
  // And the new loader goes on as if nothing happened.
  void* again = ms_allocate(second, MS_SPACE_NONCLASS, 48);
  ASSERT_NE(again, nullptr);
  if (GetParam() == 0) EXPECT_EQ(again, blocks[3]) << "best fit reuses its freed block";
  ASSERT_MS_OK(ms_loader_destroy(second));
  expect_destroyed(second, again, 48);
  expect_destroyed(first, nullptr, 0);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, ALoopOfLoadersGetsDistinctHandlesAndFewObjects) {
  // A runtime that makes and kills a loader at a time gets the same object back with the next
  // tag; 14 tags, so 100 lives take 8 objects, never more loader object memory.
  std::vector<ms_loader_t*> handles;
  std::set<uintptr_t> objects;
  for (int i = 0; i < 100; i++) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 528), nullptr);
    for (ms_loader_t* h : handles) ASSERT_NE(h, l) << "a dead handle was handed out again";
    handles.push_back(l);
    objects.insert(object_of(l));
    ASSERT_MS_OK(ms_loader_destroy(l));
  }
  EXPECT_LE(objects.size(), 8u);
  for (ms_loader_t* h : handles) expect_destroyed(h, nullptr, 0);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, RememberedWhileFewerThan1024DiedAfter) {
  ms_loader_t* dead = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(dead, nullptr);
  ASSERT_MS_OK(ms_loader_destroy(dead));
  std::vector<ms_loader_t*> live;
  for (int i = 0; i < 1023; i++) {
    // Some stay alive meanwhile, so objects are reused out of order too.
    ms_loader_t* l = ms_loader_create(ms_, i % 3 == 0 ? MS_LOADER_STANDARD : MS_LOADER_MICRO, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    ASSERT_NE(l, dead);
    if (i % 5 == 0) {
      live.push_back(l);
    } else {
      ASSERT_MS_OK(ms_loader_destroy(l));
    }
  }
  // 1023 - 205 deaths so far; kill the rest of the 1023 later ones.
  size_t deaths = 1023 - live.size();
  while (deaths < 1023) {
    ASSERT_MS_OK(ms_loader_destroy(live.back()));
    live.pop_back();
    deaths++;
  }
  expect_destroyed(dead, nullptr, 0);
  for (ms_loader_t* l : live) ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, AHandleWhoseObjectWentBackToTheKernelStillSaysDestroyed) {
  // The start: one loader made and gone, so the node's own bookkeeping pages exist already.
  ASSERT_MS_OK(ms_loader_destroy(ms_loader_create(ms_, MS_LOADER_MICRO, 0)));
  ms_purge(ms_);
  size_t start = nonclass_overhead();
  std::vector<ms_loader_t*> handles;
  for (int i = 0; i < 300; i++) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
    ASSERT_NE(l, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 200), nullptr);
    handles.push_back(l);
  }
  for (ms_loader_t* l : handles) ASSERT_MS_OK(ms_loader_destroy(l));
  ms_purge(ms_);
  // The 300 objects' pages (144 bytes each, 28 to a page) went back: what the dead loaders leave
  // is their handles, 8 bytes each (room for 512 after 300 deaths: 4 KiB), not 11 pages of
  // objects.
  EXPECT_LE(nonclass_overhead(), start + 8 * 1024);
  for (ms_loader_t* l : handles) expect_destroyed(l, nullptr, 0);
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, AnotherTagIsNoLoader) {
  ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  void* p = ms_allocate(l, MS_SPACE_NONCLASS, 32);
  ASSERT_NE(p, nullptr);
  for (uintptr_t tag = 0; tag <= MS__HANDLE_TAG_MASK; tag++) {
    auto* other = reinterpret_cast<ms_loader_t*>(object_of(l) | tag);
    if (other == l) continue;
    ms_loader_stats_t ls;
    EXPECT_EQ(ms_allocate(other, MS_SPACE_NONCLASS, 16), nullptr);
    EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT) << tag;
    EXPECT_EQ(ms_deallocate(other, p, 32), MS_ERR_INVALID_ARGUMENT) << tag;
    EXPECT_EQ(ms_loader_get_stats(other, &ls), MS_ERR_INVALID_ARGUMENT) << tag;
    EXPECT_EQ(ms_loader_destroy(other), MS_ERR_INVALID_ARGUMENT) << tag;
  }
  ms_loader_stats_t ls = metaspace::test::loader_stats(l);
  EXPECT_GE(ls.used_bytes[MS_SPACE_NONCLASS], 32u);
  ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, EachMetaspaceRemembersItsOwnDead) {
  ms_metaspace_t* other = ms_create(nullptr);
  ASSERT_NE(other, nullptr);
  ms_loader_t* dead = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
  ASSERT_NE(dead, nullptr);
  ASSERT_MS_OK(ms_loader_destroy(dead));
  // Deaths elsewhere do not count against it.
  for (int i = 0; i < 1100; i++) {
    ASSERT_MS_OK(ms_loader_destroy(ms_loader_create(other, MS_LOADER_MICRO, 0)));
  }
  expect_destroyed(dead, nullptr, 0);
  ASSERT_MS_OK(ms_verify(other));
  ms_destroy(other);
  // A metaspace going away leaves the others' dead handles alone.
  expect_destroyed(dead, nullptr, 0);
}

TEST_P(StaleHandles, ADeathWithoutRoomForItsHandleKeepsTheObjectUntilRoomIsFound) {
  using metaspace::os::FaultPoint;
  using metaspace::os::inject_fault;
  // 32 deaths fill the dead handles' first storage (DeadHandles::kInlineCapacity); the 33rd
  // needs more.
  std::vector<ms_loader_t*> dead;
  for (size_t i = 0; i < metaspace::DeadHandles::kInlineCapacity; i++) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 40), nullptr);
    ASSERT_MS_OK(ms_loader_destroy(l));
    dead.push_back(l);
  }
  ms_loader_t* kept = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ms_loader_t* witness = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(witness, nullptr);
  inject_fault(FaultPoint::kBookkeeping, 1);  // the dead handles cannot grow
  EXPECT_EQ(ms_loader_destroy(kept), MS_OK) << "the loader dies all the same";
  inject_fault(FaultPoint::kBookkeeping, 0);
  ASSERT_MS_OK(ms_verify(ms_));
  // Its object stays and says it is dead; nobody gets it.
  ms_loader_t* next = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(object_of(next), object_of(kept));
  expect_destroyed(kept, nullptr, 0);
  for (ms_loader_t* h : dead) expect_destroyed(h, nullptr, 0);
  // The next death finds room for both handles; the kept object goes back and is reused.
  ASSERT_MS_OK(ms_loader_destroy(witness));
  ASSERT_MS_OK(ms_verify(ms_));
  expect_destroyed(kept, nullptr, 0);
  expect_destroyed(witness, nullptr, 0);
  std::set<uintptr_t> objects;
  std::vector<ms_loader_t*> fresh;
  for (int i = 0; i < 3; i++) {
    fresh.push_back(ms_loader_create(ms_, MS_LOADER_STANDARD, 0));
    ASSERT_NE(fresh.back(), nullptr);
    objects.insert(object_of(fresh.back()));
  }
  EXPECT_TRUE(objects.count(object_of(kept)) || objects.count(object_of(witness)))
      << "the objects of the dead are handed out again";
  expect_destroyed(kept, nullptr, 0);
  for (ms_loader_t* l : fresh) ASSERT_MS_OK(ms_loader_destroy(l));
  ASSERT_MS_OK(ms_loader_destroy(next));
  ASSERT_MS_OK(ms_verify(ms_));
}

TEST_P(StaleHandles, ALongLoopHoldsAFewObjectsAndEveryRecentHandleStaysDead) {
  // 5 000 lives one at a time: an object's 14 handles are all remembered after 14 of them, so it
  // is parked until they are forgotten; about 1 024 / 14 objects rotate, a few slab pages.
  ms_loader_destroy(ms_loader_create(ms_, MS_LOADER_MICRO, 0));
  ms_purge(ms_);
  size_t start = nonclass_overhead();
  std::vector<ms_loader_t*> recent;
  for (int i = 0; i < 5000; i++) {
    ms_loader_t* l = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    ASSERT_MS_OK(ms_loader_destroy(l));
    if (i >= 5000 - 1000) recent.push_back(l);
    if (i % 500 == 0) ASSERT_MS_OK(ms_verify(ms_));
  }
  ms_purge(ms_);
  // 75 objects of 144 bytes (3 pages), the dead handles (8 KiB): 5 pages and some slack.
  EXPECT_LE(nonclass_overhead(), start + 8 * 4096);
  for (ms_loader_t* h : recent) expect_destroyed(h, nullptr, 0);
  ASSERT_MS_OK(ms_verify(ms_));
}

}  // namespace
