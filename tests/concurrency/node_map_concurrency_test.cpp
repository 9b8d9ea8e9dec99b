// The node map under churn (run under TSan with the `concurrency` label): readers look up nodes
// that stay alive, without a lock, while a writer adds and removes other nodes fast enough to
// rebuild the table again and again (its old pages go back to the kernel and the region is
// reused two rebuilds later). A lookup of a live node must never miss nor return another node.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "common/units.hpp"
#include "os/os_memory.hpp"
#include "vspace/node_map.hpp"
#include "vspace/virtual_space_list.hpp"

namespace metaspace {
namespace {

TEST(NodeMapConcurrency, LiveNodesAreAlwaysFoundWhileOthersChurn) {
  constexpr size_t kArea = 64 * KiB;
  constexpr size_t kAreas = 4096;
  char* range = nullptr;
  ASSERT_EQ(os::reserve(kAreas * kArea, kArea, 0, &range), MS_OK);
  std::atomic<size_t> committed{0};
  NodeMap map(kArea, &committed);
  ASSERT_EQ(map.init(), MS_OK);
  // Fake node identities: only stored and compared.
  std::vector<char> identities(kAreas);
  auto node_of = [&](size_t area) {
    return reinterpret_cast<VirtualSpaceNode*>(&identities[area]);
  };
  std::mutex writers;  // the chunk manager's lock, in the library
  // Areas 0..7 stay for the whole test.
  for (size_t a = 0; a < 8; a++) {
    std::lock_guard<std::mutex> guard(writers);
    ASSERT_EQ(map.add(range + a * kArea, kArea, node_of(a)), MS_OK);
  }
  std::atomic<bool> stop{false};
  std::atomic<size_t> misses{0};
  std::atomic<size_t> lookups{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++) {
    readers.emplace_back([&, t] {
      size_t a = static_cast<size_t>(t);
      while (!stop.load(std::memory_order_relaxed)) {
        a = (a + 1) % 8;
        if (map.find(range + a * kArea + 100) != node_of(a)) misses++;
        lookups++;
      }
    });
  }
  uint64_t rebuilds_before = map.rebuilds();
  // Batches of up to 600 areas come and go: the table grows, is rebuilt without tombstones, and
  // shrinks back.
  for (int round = 0; round < 200; round++) {
    size_t n = 100 + static_cast<size_t>(round % 6) * 100;
    {
      std::lock_guard<std::mutex> guard(writers);
      for (size_t a = 8; a < 8 + n; a++) {
        ASSERT_EQ(map.add(range + a * kArea, kArea, node_of(a)), MS_OK);
      }
    }
    std::lock_guard<std::mutex> guard(writers);
    for (size_t a = 8; a < 8 + n; a++) map.remove(range + a * kArea, kArea);
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(misses.load(), 0u) << "of " << lookups.load() << " lookups";
  EXPECT_GT(map.rebuilds() - rebuilds_before, 100u);
  {
    std::lock_guard<std::mutex> guard(writers);
    EXPECT_TRUE(map.verify());
    EXPECT_EQ(map.entries(), 8u);
    EXPECT_EQ(map.slots(), NodeMap::kInitialSlots);
  }
  EXPECT_EQ(committed.load(), os::page_size()) << "one small table left";
  os::release(range, kAreas * kArea);
}

// A list's first node is found by its range until the second comes; then both go into the map
// and readers switch to it. A reader looking up the first node while that happens must find it
// every time (it holds memory there: in the library, its own chunk).
TEST(NodeMapConcurrency, FirstNodeFoundWhileTheSecondArrives) {
  constexpr NodeGeometry kGeometry{.reserve_bytes = 256 * KiB, .root_chunk_bytes = 64 * KiB,
                                   .granule_bytes = 4 * KiB, .protect_uncommitted = false};
  size_t misses = 0;
  size_t lookups = 0;
  for (int round = 0; round < 100; round++) {
    CommitLimiter limiter(0);
    VirtualSpaceList list(kGeometry, limiter, {.expandable = true});
    ASSERT_TRUE(list.ok());
    VirtualSpaceNode* first = nullptr;
    ASSERT_NE(list.allocate_root_chunk(&first), nullptr);
    std::atomic<bool> stop{false};
    std::atomic<size_t> round_misses{0};
    std::atomic<size_t> round_lookups{0};
    std::thread reader([&] {
      size_t i = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        const char* p = first->base() + (i++ * 4 * KiB) % kGeometry.reserve_bytes;
        if (list.node_containing(p) != first) round_misses++;
        round_lookups++;
      }
    });
    while (round_lookups.load() == 0) std::this_thread::yield();  // the reader runs
    VirtualSpaceNode* node = first;
    for (int n = 0; n < 3 * 4 + 1; n++) ASSERT_NE(list.allocate_root_chunk(&node), nullptr);
    while (round_lookups.load() < 1000) std::this_thread::yield();
    stop = true;
    reader.join();
    misses += round_misses.load();
    lookups += round_lookups.load();
    EXPECT_EQ(list.nodes().size(), 4u);
    EXPECT_TRUE(list.verify());
  }
  EXPECT_EQ(misses, 0u) << "of " << lookups << " lookups";
}

}  // namespace
}  // namespace metaspace
