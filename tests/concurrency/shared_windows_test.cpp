// One MS_LOADER_SHARED loader used by many threads at once, each bumping in its own window
// (src/loader/shared_windows.*): blocks never overlap, every window is visible to ms_verify and
// the statistics while threads allocate, loader death follows the documented contract, and a
// block freed by one thread is reused by another. Built for TSan (`--preset tsan`).
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/mman.h>

#include "loader/shared_windows.hpp"
#include "support/accounting.hpp"

namespace {

using metaspace::test::accounted_bytes;

struct Block {
  void* p;
  size_t n;
};

// A size from a small mix: mostly window-sized requests, some above kMaxWindowRequest (locked).
size_t size_of(size_t thread, size_t i) {
  size_t k = (thread * 7919 + i * 104729) % 100;
  return k < 90 ? 8 * (1 + k % 24) : 1024 + 8 * k;
}

// The value every byte of thread t's block i holds.
unsigned char tag_of(size_t thread, size_t i) { return static_cast<unsigned char>(thread * 31 + i); }

// A metaspace that counts allocations (the windows' blocks are then counted exactly).
ms_metaspace_t* counting_metaspace() {
  ms_settings_t s;
  ms_settings_init(&s);
  s.count_allocations = 1;
  return ms_create(&s);
}

void expect_identity(ms_metaspace_t* ms) {
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  for (const ms_space_stats_t& sp : {st.space[0], st.space[1], st.total}) {
    EXPECT_EQ(sp.committed_bytes, accounted_bytes(sp));
  }
}

// ms_verify and the accounting identity hold while the loader lives and after it died (its
// windows go with its chunks).
void expect_consistent_through_destroy(ms_metaspace_t* ms, ms_loader_t* loader) {
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  ASSERT_EQ(ms_loader_destroy(loader), MS_OK);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
}

TEST(SharedWindows, EightThreadsBlocksNeverOverlap) {
  constexpr size_t kThreads = 8;
  constexpr size_t kBlocks = 3000;
  ms_metaspace_t* ms = counting_metaspace();
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::vector<std::vector<Block>> blocks(kThreads);
  std::barrier start(static_cast<std::ptrdiff_t>(kThreads));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (size_t i = 0; i < kBlocks; i++) {
        size_t n = size_of(t, i);
        void* p = ms_allocate(shared, MS_SPACE_NONCLASS, n);
        if (p == nullptr) return;
        std::memset(p, tag_of(t, i), n);
        blocks[t].push_back({p, n});
      }
    });
  }
  for (auto& th : threads) th.join();
  // After all threads joined: every byte still holds its owner's pattern.
  size_t bad = 0;
  for (size_t t = 0; t < kThreads; t++) {
    ASSERT_EQ(blocks[t].size(), kBlocks) << "thread " << t << ": " << ms_last_error_text();
    for (size_t i = 0; i < kBlocks; i++) {
      const auto* b = static_cast<const unsigned char*>(blocks[t][i].p);
      for (size_t k = 0; k < blocks[t][i].n; k++) bad += b[k] != tag_of(t, i);
    }
  }
  EXPECT_EQ(bad, 0u) << "bytes written over by another thread's block";
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  EXPECT_EQ(ls.allocations, kThreads * kBlocks) << "window blocks are counted";
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

TEST(SharedWindows, VisibleToVerifyAndStatisticsWhileThreadsAllocate) {
  constexpr size_t kThreads = 4;
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<size_t> failures{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; !stop.load(std::memory_order_relaxed) && i < 200000; i++) {
        // Some Klasses: class space windows are checked too.
        bool klass = i % 19 == 0;
        size_t n = klass ? 600 : size_of(t, i);
        void* p = ms_allocate(shared, klass ? MS_SPACE_CLASS : MS_SPACE_NONCLASS, n);
        if (p == nullptr) {
          failures++;
          return;
        }
        std::memset(p, 1, n);
        if (i % 7 == 0 && ms_deallocate(shared, p, n) != MS_OK) failures++;
      }
    });
  }
  size_t rounds = 0;
  for (; rounds < 50; rounds++) {
    ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
    ms_stats_t st;
    ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
    EXPECT_EQ(st.total.committed_bytes, accounted_bytes(st.total));
    ms_loader_stats_t ls;
    ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  }
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0u) << ms_last_error_text();
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  ASSERT_EQ(ms_loader_destroy(shared), MS_OK);
  ms_destroy(ms);
}

// The contract: the caller orders ms_loader_destroy after every other call on the loader (here:
// the threads' allocations happen before a barrier the destroying thread waits on). The threads
// keep their cache entries for the dead loader's windows; afterwards the dead handle is refused
// and a new loader's windows are its own.
TEST(SharedWindows, LoaderDiesWhileWindowsAreOpen) {
  constexpr size_t kThreads = 4;
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* loader = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(loader, nullptr);
  ms_loader_t* next = nullptr;
  std::barrier phase(static_cast<std::ptrdiff_t>(kThreads + 1));
  std::atomic<size_t> failures{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 500; i++) {
        if (ms_allocate(loader, MS_SPACE_NONCLASS, 8 * (1 + i % 16)) == nullptr) failures++;
      }
      phase.arrive_and_wait();  // windows open; the main thread destroys the loader
      phase.arrive_and_wait();  // ... and creates the next one
      if (ms_allocate(loader, MS_SPACE_NONCLASS, 16) != nullptr ||
          ms_last_error() != MS_ERR_DESTROYED) {
        failures++;
      }
      for (size_t i = 0; i < 500; i++) {
        void* p = ms_allocate(next, MS_SPACE_NONCLASS, 8 * (1 + (i + t) % 16));
        if (p == nullptr || ms_deallocate(next, p, 8 * (1 + (i + t) % 16)) != MS_OK) failures++;
      }
    });
  }
  phase.arrive_and_wait();
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ASSERT_EQ(ms_loader_destroy(loader), MS_OK);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  next = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(next, nullptr);
  phase.arrive_and_wait();
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  ASSERT_EQ(ms_loader_destroy(next), MS_OK);
  ms_destroy(ms);
}

// A block freed by one thread is handed out again (best fit first) to another thread's request,
// when that thread needs a window. (A new thread may take over an exited thread's window: its
// thread-local cache can lie where the old one's did. It uses that window up first.)
TEST(SharedWindows, BlockFreedByOneThreadIsReusedByAnother) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  constexpr size_t kBlocks = 64;
  constexpr size_t kBytes = 200;
  std::vector<void*> blocks;
  std::thread([&] {
    for (size_t i = 0; i < kBlocks; i++) blocks.push_back(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes));
  }).join();
  expect_identity(ms);
  std::thread([&] {
    for (void* p : blocks) EXPECT_EQ(ms_deallocate(shared, p, kBytes), MS_OK);
  }).join();
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  std::set<void*> freed(blocks.begin(), blocks.end());
  std::vector<void*> again;
  constexpr size_t kWindowBlocks = metaspace::SharedWindows::kMaxWindowBytes / kBytes + 1;
  std::thread([&] {
    for (size_t i = 0; i < kBlocks + kWindowBlocks; i++) {
      again.push_back(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes));
    }
  }).join();
  size_t reused = 0;
  for (void* p : again) reused += freed.count(p);
  EXPECT_EQ(reused, kBlocks) << "every freed block is reused once a window runs out";
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  expect_identity(ms);
  ASSERT_EQ(ms_loader_destroy(shared), MS_OK);
  ms_destroy(ms);
}

// Threads that come and go (a thread per request, a pool that shrinks and grows) leave no
// windows behind: a thread that ends orphans its window, and the next thread that needs one in
// that loader adopts it, rest and all. Every thread here runs on a stack of its own that stays
// mapped, so that no thread's stack and thread-local data lie where an ended thread's did.
// Windows used to be known by that address: each of these 800 threads left a window of 8 KiB
// behind (~6 MB counted as used for 0.5 MB of blocks).
struct OwnStackThread {
  static constexpr size_t kStackBytes = 2 * 1024 * 1024;  // TSan asks for 0.9 MiB at least
  void* stack = nullptr;
  pthread_t id{};
  std::function<void()> body;

  explicit OwnStackThread(std::function<void()> f) : body(std::move(f)) {
    stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) std::abort();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, kStackBytes);
    if (pthread_create(&id, &attr, [](void* self) -> void* {
          static_cast<OwnStackThread*>(self)->body();
          return nullptr;
        }, this) != 0) {
      std::abort();
    }
    pthread_attr_destroy(&attr);
  }
  void join() { pthread_join(id, nullptr); }
  ~OwnStackThread() { munmap(stack, kStackBytes); }  // after join: nothing runs on it
};

TEST(SharedWindows, ThreadsThatComeAndGoLeaveNoWindowsBehind) {
  constexpr size_t kWaves = 100;
  constexpr size_t kThreads = 8;
  constexpr size_t kBlocks = 10;
  constexpr size_t kBytes = 64;
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::vector<std::unique_ptr<OwnStackThread>> ended;  // their stacks stay mapped to the end
  // One thread ends; the next continues its window: its first block lies right behind.
  void* first = nullptr;
  void* second = nullptr;
  ended.push_back(std::make_unique<OwnStackThread>(
      [&] { first = ms_allocate(shared, MS_SPACE_NONCLASS, kBytes); }));
  ended.back()->join();
  ended.push_back(std::make_unique<OwnStackThread>(
      [&] { second = ms_allocate(shared, MS_SPACE_NONCLASS, kBytes); }));
  ended.back()->join();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(second, static_cast<char*>(first) + kBytes) << "the ended thread's window was not adopted";
  std::atomic<size_t> failures{0};
  for (size_t wave = 0; wave < kWaves; wave++) {
    size_t from = ended.size();
    for (size_t t = 0; t < kThreads; t++) {
      ended.push_back(std::make_unique<OwnStackThread>([&, t] {
        for (size_t i = 0; i < kBlocks; i++) {
          void* p = ms_allocate(shared, MS_SPACE_NONCLASS, kBytes);
          if (p == nullptr) {
            failures++;
            continue;
          }
          std::memset(p, static_cast<int>(tag_of(t, i)), kBytes);
        }
      }));
    }
    for (size_t t = from; t < ended.size(); t++) ended[t]->join();
  }
  EXPECT_EQ(failures.load(), 0u);
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  size_t live = (kWaves * kThreads * kBlocks + 2) * kBytes;
  // At most one open window per thread alive at once, each with less than a window unused.
  size_t open_bound = kThreads * (metaspace::SharedWindows::kMaxWindowBytes +
                                  metaspace::SharedWindows::kMaxWindowRequest);
  EXPECT_GE(ls.used_bytes[MS_SPACE_NONCLASS], live);
  EXPECT_LE(ls.used_bytes[MS_SPACE_NONCLASS], live + open_bound)
      << "windows of ended threads are left behind";
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

// A pool that shrinks: eight threads allocate and end; the one thread left adopts one of their
// windows, and when it next needs a window the other seven are retired, their rests filed as
// free blocks (the next windows come from them) instead of staying counted as used until the
// loader dies. With count_allocations, every block the ended threads made stays counted.
TEST(SharedWindows, WindowsOfEndedThreadsNoOneAdoptsAreRetiredAtTheNextWindow) {
  constexpr size_t kThreads = 8;
  constexpr size_t kBlocks = 10;
  constexpr size_t kBytes = 64;
  ms_metaspace_t* ms = counting_metaspace();
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::barrier all_allocated(static_cast<std::ptrdiff_t>(kThreads));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (size_t i = 0; i < kBlocks; i++) ASSERT_NE(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes), nullptr);
      all_allocated.arrive_and_wait();  // eight windows open at once
    });
  }
  for (auto& th : threads) th.join();
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  size_t live = kThreads * kBlocks * kBytes;
  EXPECT_GE(ls.used_bytes[MS_SPACE_NONCLASS], live + (kThreads - 1) * 4096)
      << "the ended threads' windows are open, counted as used";
  // The survivor: blocks until well past one window, so that it takes new windows.
  size_t survivor_blocks = 2 * metaspace::SharedWindows::kMaxWindowBytes / kBytes;
  for (size_t i = 0; i < survivor_blocks; i++) {
    ASSERT_NE(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes), nullptr);
  }
  live += survivor_blocks * kBytes;
  ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  EXPECT_LE(ls.used_bytes[MS_SPACE_NONCLASS],
            live + metaspace::SharedWindows::kMaxWindowBytes +
                metaspace::SharedWindows::kMaxWindowRequest)
      << "windows of ended threads are still counted as used";
  EXPECT_EQ(ls.allocations, kThreads * kBlocks + survivor_blocks);
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

// Klasses bump in class space windows: two threads taking turns block by block still get their
// Klasses back to back (through the loader lock, each went behind the other's).
TEST(SharedWindows, KlassesOfOneThreadLieBackToBackWhileAnotherAllocates) {
  constexpr size_t kKlasses = 300;
  constexpr size_t kBytes = 600;
  ms_metaspace_t* ms = counting_metaspace();
  ASSERT_NE(ms, nullptr);
  // A boot loader: its Klasses never come from the micro pool.
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_BOOT, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::vector<char*> klasses[2];
  std::atomic<size_t> turn{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 2; t++) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kKlasses; i++) {
        while (turn.load() % 2 != t) std::this_thread::yield();
        klasses[t].push_back(static_cast<char*>(ms_allocate(shared, MS_SPACE_CLASS, kBytes)));
        void* p = ms_allocate(shared, MS_SPACE_NONCLASS, 64);
        if (p != nullptr) std::memset(p, 1, 64);
        turn++;
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<char*> all;
  for (size_t t = 0; t < 2; t++) {
    size_t back_to_back = 0;
    for (size_t i = 0; i < kKlasses; i++) {
      char* k = klasses[t][i];
      ASSERT_NE(k, nullptr) << ms_last_error_text();
      EXPECT_TRUE(ms_is_class_space(ms, k));
      all.push_back(k);
      if (i > 0) back_to_back += k == klasses[t][i - 1] + kBytes;
    }
    // Windows of 2, 4, ... 64 KiB hold 3, 6, ... 109 of them; a new one may start elsewhere.
    EXPECT_GE(back_to_back, kKlasses * 9 / 10) << "thread " << t;
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); i++) {
    EXPECT_GE(all[i], all[i - 1] + kBytes) << "two Klasses overlap";
  }
  ms_loader_stats_t ls;
  ASSERT_EQ(ms_loader_get_stats(shared, &ls), MS_OK);
  EXPECT_EQ(ls.allocations, 4 * kKlasses) << "window blocks of both spaces are counted";
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

// A thread bumps on in its window without looking at free blocks; the block it freed is reused,
// best fit, as soon as it needs a new window.
TEST(SharedWindows, AFreedBlockIsTheNextWindowOfTheThreadThatNeedsOne) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  constexpr size_t kBytes = 104;
  std::vector<void*> blocks;
  for (size_t i = 0; i < 10; i++) blocks.push_back(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes));
  ASSERT_EQ(ms_deallocate(shared, blocks[5], kBytes), MS_OK);
  size_t calls = 0;
  constexpr size_t kLimit = metaspace::SharedWindows::kMaxWindowBytes / kBytes + 2;
  while (calls < kLimit && ms_allocate(shared, MS_SPACE_NONCLASS, kBytes) != blocks[5]) calls++;
  EXPECT_LT(calls, kLimit) << "the freed block was not reused when the window ran out";
  EXPECT_GT(calls, 0u) << "the window is used up first";
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

// The Klass that graduates a shared standard loader from the micro pool (past 8 KiB of pooled
// Klasses) marks the loader under its lock while other threads bump their windows without it,
// reading the same loader object. The mark must not disturb them (under TSan: no data race on
// the loader's kind byte, which CI caught once in the statistics test above), and their blocks
// stay whole and apart.
TEST(SharedWindows, GraduationByOneThreadWhileOthersBumpTheirWindows) {
  constexpr size_t kBumpers = 2;
  constexpr size_t kBytes = 16;
  constexpr size_t kMaxBlocks = 100000;
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  // Relaxed on purpose: a release/acquire pair would order the bumpers after the graduation
  // and hide a race from TSan.
  std::atomic<bool> stop{false};
  std::atomic<size_t> started{0};
  std::vector<std::vector<unsigned char*>> blocks(kBumpers);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kBumpers; t++) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kMaxBlocks; i++) {
        if (i == 1) started++;
        if (i > 0 && stop.load(std::memory_order_relaxed)) break;
        auto* p = static_cast<unsigned char*>(ms_allocate(shared, MS_SPACE_NONCLASS, kBytes));
        if (p == nullptr) break;
        std::memset(p, tag_of(t, i), kBytes);
        blocks[t].push_back(p);
      }
    });
  }
  while (started.load() < kBumpers) std::this_thread::yield();
  std::vector<char*> klasses;
  for (size_t i = 0; i < 24; i++) {  // 24 * 600 bytes: the pool's 8 KiB is passed on the way
    klasses.push_back(static_cast<char*>(ms_allocate(shared, MS_SPACE_CLASS, 600)));
    ASSERT_NE(klasses.back(), nullptr) << ms_last_error_text();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.store(true, std::memory_order_relaxed);
  for (auto& th : threads) th.join();
  std::vector<std::pair<unsigned char*, size_t>> all;
  for (size_t t = 0; t < kBumpers; t++) {
    EXPECT_GT(blocks[t].size(), 1u) << "thread " << t << ": " << ms_last_error_text();
    for (size_t i = 0; i < blocks[t].size(); i++) {
      unsigned char* p = blocks[t][i];
      EXPECT_EQ(std::count(p, p + kBytes, tag_of(t, i)), static_cast<long>(kBytes))
          << "thread " << t << " block " << i << " was overwritten";
      all.emplace_back(p, kBytes);
    }
  }
  for (char* k : klasses) all.emplace_back(reinterpret_cast<unsigned char*>(k), 600);
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); i++) {
    EXPECT_GE(all[i].first, all[i - 1].first + all[i - 1].second) << "two blocks overlap";
  }
  expect_consistent_through_destroy(ms, shared);
  ms_destroy(ms);
}

}  // namespace
