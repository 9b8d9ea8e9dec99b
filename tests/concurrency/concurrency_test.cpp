// Many loaders used from many threads at once: workers create, fill, partly free and destroy
// their own loaders (fast path, no locks), others share one MS_LOADER_SHARED loader, and an
// observer takes statistics and verifies everything in a loop. Built for TSan.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/accounting.hpp"
#include "support/failures.hpp"

namespace {

constexpr auto kRunTime = std::chrono::milliseconds(1500);

using metaspace::test::Failures;

// Fills a block with a pattern and checks it later: two owners of the same memory would show.
void fill(void* p, size_t n, unsigned char tag) { std::memset(p, tag, n); }
bool intact(const void* p, size_t n, unsigned char tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != tag) return false;
  }
  return true;
}

struct Block {
  void* p;
  size_t n;
  unsigned char tag;
};

void own_loaders(ms_metaspace_t* ms, int id, const std::atomic<bool>& stop, Failures& failures,
                 std::atomic<uint64_t>& loaders_done) {
  std::mt19937 rng(static_cast<unsigned>(id));
  while (!stop.load(std::memory_order_relaxed)) {
    ms_loader_kind_t kind = rng() % 4 == 0 ? MS_LOADER_MICRO : MS_LOADER_STANDARD;
    ms_loader_t* l = ms_loader_create(ms, kind, 0);
    if (l == nullptr) {
      failures.add(std::string("create: ") + ms_last_error_text());
      return;
    }
    std::vector<Block> blocks;
    int classes = kind == MS_LOADER_MICRO ? 1 : 1 + static_cast<int>(rng() % 20);
    for (int c = 0; c < classes; c++) {
      size_t k = 500 + rng() % 525;
      void* klass = ms_allocate(l, MS_SPACE_CLASS, k);
      if (klass == nullptr) {
        failures.add(std::string("class allocation: ") + ms_last_error_text());
        return;
      }
      auto tag = static_cast<unsigned char>(rng());
      fill(klass, k, tag);
      blocks.push_back({klass, k, tag});
      for (int i = 0; i < 40; i++) {
        size_t n = 8 + rng() % 160;
        void* p = ms_allocate(l, MS_SPACE_NONCLASS, n);
        if (p == nullptr) {
          failures.add(std::string("allocation: ") + ms_last_error_text());
          return;
        }
        tag = static_cast<unsigned char>(rng());
        fill(p, n, tag);
        blocks.push_back({p, n, tag});
      }
    }
    // A few premature deallocations, then more allocation that may reuse them.
    for (size_t i = 1; i < blocks.size(); i += 50) {
      if (ms_deallocate(l, blocks[i].p, blocks[i].n) != MS_OK) {
        failures.add(std::string("deallocate: ") + ms_last_error_text());
      }
      blocks[i].n = 0;
    }
    for (int i = 0; i < 20; i++) {
      void* p = ms_allocate(l, MS_SPACE_NONCLASS, 24);
      if (p == nullptr) {
        failures.add(std::string("allocation after free: ") + ms_last_error_text());
        continue;
      }
      fill(p, 24, 0x77);
      blocks.push_back({p, 24, 0x77});
    }
    for (const Block& b : blocks) {
      if (b.n != 0 && !intact(b.p, b.n, b.tag)) failures.add("block overwritten");
    }
    ms_loader_stats_t ls;
    if (ms_loader_get_stats(l, &ls) != MS_OK) failures.add(ms_last_error_text());
    if (ms_loader_destroy(l) != MS_OK) failures.add(std::string("destroy: ") + ms_last_error_text());
    loaders_done.fetch_add(1, std::memory_order_relaxed);
  }
}

void use_shared(ms_loader_t* shared, int id, const std::atomic<bool>& stop, Failures& failures,
                std::atomic<uint64_t>& allocations) {
  std::mt19937 rng(1000u + static_cast<unsigned>(id));
  std::vector<Block> mine;
  while (!stop.load(std::memory_order_relaxed)) {
    ms_space_t space = rng() % 30 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    size_t n = space == MS_SPACE_CLASS ? 500 + rng() % 500 : 8 + rng() % 200;
    void* p = ms_allocate(shared, space, n);
    if (p == nullptr) {
      failures.add(std::string("shared allocation: ") + ms_last_error_text());
      return;
    }
    auto tag = static_cast<unsigned char>(id * 16 + rng() % 16);
    fill(p, n, tag);
    mine.push_back({p, n, tag});
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (mine.size() > 64) {
      // Check and free a random one of this thread's blocks: another thread may reuse it next.
      size_t i = rng() % mine.size();
      if (!intact(mine[i].p, mine[i].n, mine[i].tag)) failures.add("shared block overwritten");
      if (ms_deallocate(shared, mine[i].p, mine[i].n) != MS_OK) {
        failures.add(std::string("shared deallocate: ") + ms_last_error_text());
      }
      mine[i] = mine.back();
      mine.pop_back();
    }
  }
  for (const Block& b : mine) {
    if (!intact(b.p, b.n, b.tag)) failures.add("shared block overwritten");
  }
}

void observe(ms_metaspace_t* ms, const std::atomic<bool>& stop, Failures& failures,
             std::atomic<uint64_t>& rounds) {
  while (!stop.load(std::memory_order_relaxed)) {
    ms_stats_t st;
    if (ms_get_stats(ms, &st) != MS_OK) failures.add(ms_last_error_text());
    for (const ms_space_stats_t& s : st.space) {
      size_t accounted = metaspace::test::accounted_bytes(s);
      if (accounted != s.committed_bytes) failures.add("snapshot does not add up");
    }
    if (ms_verify(ms) != MS_OK) failures.add(std::string("verify: ") + ms_last_error_text());
    rounds.fetch_add(1, std::memory_order_relaxed);
  }
}

TEST(Concurrency, LoadersStatisticsAndVerifyFromManyThreads) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = 64;  // gaps travel from class to non-class arenas under the locks too
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);

  std::atomic<bool> stop{false};
  Failures failures;
  std::atomic<uint64_t> loaders_done{0};
  std::atomic<uint64_t> shared_allocations{0};
  std::atomic<uint64_t> observer_rounds{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; i++) {
    threads.emplace_back(own_loaders, ms, i, std::cref(stop), std::ref(failures),
                         std::ref(loaders_done));
  }
  for (int i = 0; i < 2; i++) {
    threads.emplace_back(use_shared, shared, i, std::cref(stop), std::ref(failures),
                         std::ref(shared_allocations));
  }
  threads.emplace_back(observe, ms, std::cref(stop), std::ref(failures),
                       std::ref(observer_rounds));
  std::this_thread::sleep_for(kRunTime);
  stop.store(true);
  for (std::thread& t : threads) t.join();

  for (const std::string& m : failures.messages) ADD_FAILURE() << m;
  EXPECT_GT(loaders_done.load(), 0u);
  EXPECT_GT(shared_allocations.load(), 0u);
  EXPECT_GT(observer_rounds.load(), 0u);
  std::printf("[ concurrency ] %llu loaders created and destroyed, %llu shared allocations, "
              "%llu observer rounds\n",
              static_cast<unsigned long long>(loaders_done.load()),
              static_cast<unsigned long long>(shared_allocations.load()),
              static_cast<unsigned long long>(observer_rounds.load()));
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.loaders, 1u);
  ASSERT_EQ(ms_loader_destroy(shared), MS_OK);
  ms_purge(ms);
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.total.used_bytes, 0u);
  ms_destroy(ms);
}

// Loaders are created and destroyed from two threads while an observer verifies. A dead
// loader's object is reused at once under another handle, and the last 1024 dead handles are
// remembered, so that a handle used after its destruction gets MS_ERR_DESTROYED; each thread
// checks exactly that on its previous loader (whose object may be the other thread's loader by
// then) while the other thread keeps killing loaders.
TEST(Concurrency, DeadHandlesStayDeadWhileOtherThreadsChurn) {
  constexpr unsigned kRounds = 400;
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  Failures failures;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> rounds{0};
  std::atomic<uint64_t> dead_checked{0};
  std::thread observer(observe, ms, std::cref(stop), std::ref(failures), std::ref(rounds));
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; t++) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(77u + static_cast<unsigned>(t));
      ms_loader_t* previous = nullptr;
      // 2 × 400 deaths in all stay below the 1024 remembered whatever the scheduling.
      for (unsigned i = 0; i < kRounds; i++) {
        ms_loader_t* l = ms_loader_create(ms, MS_LOADER_MICRO, 0);
        if (l == nullptr) {
          failures.add(ms_last_error_text());
          return;
        }
        if (l == previous) failures.add("a dead loader's handle was handed out again");
        if (ms_allocate(l, MS_SPACE_CLASS, 528) == nullptr ||
            ms_allocate(l, MS_SPACE_NONCLASS, 8 + rng() % 300) == nullptr) {
          failures.add(ms_last_error_text());
        }
        if (previous != nullptr) {
          // Fewer than 1024 deaths since: still remembered.
          if (ms_allocate(previous, MS_SPACE_NONCLASS, 16) != nullptr ||
              ms_last_error() != MS_ERR_DESTROYED) {
            failures.add("a dead handle was served");
          }
          if (ms_loader_destroy(previous) != MS_ERR_DESTROYED) failures.add("destroyed twice");
          dead_checked.fetch_add(1, std::memory_order_relaxed);
        }
        if (ms_loader_destroy(l) != MS_OK) failures.add(ms_last_error_text());
        previous = l;
      }
    });
  }
  for (std::thread& t : workers) t.join();
  stop.store(true);
  observer.join();
  for (const std::string& m : failures.messages) ADD_FAILURE() << m;
  EXPECT_EQ(dead_checked.load(), 2u * (kRounds - 1));
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

// The header promises that statistics, reports and verification may run at any time: text and
// JSON reports, per-loader statistics of loaders that other threads are using (and killing),
// ms_verify and ms_purge run from three threads while four threads churn loaders.
TEST(Concurrency, ReportsLoaderStatisticsAndVerifyWhileLoadersChurn) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = 64;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  std::atomic<bool> stop{false};
  Failures failures;
  constexpr int kWorkers = 4;
  std::atomic<ms_loader_t*> current[kWorkers] = {};
  std::atomic<uint64_t> loaders_done{0}, reports{0}, loader_stats{0}, verifies{0};
  std::atomic<uint64_t> forgotten_handles{0};  // read before 1 024 later deaths (see below)
  std::vector<std::thread> threads;
  for (int id = 0; id < kWorkers; id++) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(500u + static_cast<unsigned>(id));
      while (!stop.load(std::memory_order_relaxed)) {
        ms_loader_t* l = ms_loader_create(ms, rng() % 3 == 0 ? MS_LOADER_MICRO
                                                             : MS_LOADER_STANDARD,
                                          rng() % 2 == 0 ? MS_LOADER_SHARED : 0);
        if (l == nullptr) return failures.add(ms_last_error_text());
        current[id].store(l, std::memory_order_release);
        for (int i = 0; i < 200; i++) {
          ms_space_t space = i % 10 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
          size_t n = 8 + rng() % 400;
          void* p = ms_allocate(l, space, n);
          if (p == nullptr) return failures.add(ms_last_error_text());
          std::memset(p, 0x5C, n);
          if (i % 7 == 0 && ms_deallocate(l, p, n) != MS_OK) failures.add(ms_last_error_text());
        }
        current[id].store(nullptr, std::memory_order_release);
        if (ms_loader_destroy(l) != MS_OK) failures.add(ms_last_error_text());
        loaders_done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads.emplace_back([&] {  // reports, text and JSON, into a memory stream
    while (!stop.load(std::memory_order_relaxed)) {
      char* buf = nullptr;
      size_t len = 0;
      FILE* f = open_memstream(&buf, &len);
      ms_report_options_t o{};
      o.per_loader = 1;
      o.per_kind = 1;
      o.free_lists = 1;
      if (ms_print_report(ms, f, &o) != MS_OK || ms_write_report_json(ms, f, &o) != MS_OK) {
        failures.add(std::string("report: ") + ms_last_error_text());
      }
      std::fclose(f);
      if (len == 0 || std::strstr(buf, "libmetaspace.report") == nullptr) {
        failures.add("report empty or without its JSON schema name");
      }
      std::free(buf);
      reports.fetch_add(1, std::memory_order_relaxed);
    }
  });
  threads.emplace_back([&] {  // per-loader statistics of other threads' loaders
    std::mt19937 rng(9);
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t deaths_before = loaders_done.load(std::memory_order_acquire);
      ms_loader_t* l = current[rng() % kWorkers].load(std::memory_order_acquire);
      if (l == nullptr) continue;
      ms_loader_stats_t ls;
      ms_error_t e = ms_loader_get_stats(l, &ls);
      // The owner may have destroyed it since: a remembered dead handle says so (never read
      // from a freed object: the check runs under the registry lock, docs/threads.md). A handle
      // is remembered while fewer than 1 024 loaders of the metaspace died after it
      // (docs/guarantees.md); this thread can lose the registry lock to the workers for that
      // long (seen once in CI: 33 051 loaders in 1.5 s, 1 024 deaths in ~46 ms), and then the
      // handle is no loader's any more. Up to kWorkers deaths are not counted yet.
      const uint64_t deaths = loaders_done.load(std::memory_order_acquire) - deaths_before;
      const bool forgotten = e == MS_ERR_INVALID_ARGUMENT && deaths + kWorkers > 1024;
      if (forgotten) forgotten_handles.fetch_add(1, std::memory_order_relaxed);
      if (e != MS_OK && e != MS_ERR_DESTROYED && !forgotten) {
        failures.add(std::string(ms_last_error_text()) + " (" + std::to_string(deaths) +
                     " deaths since the handle was read)");
      }
      if (e == MS_OK && ls.used_bytes[0] > ls.committed_bytes[0]) {
        failures.add("loader uses more than it has committed");
      }
      loader_stats.fetch_add(1, std::memory_order_relaxed);
    }
  });
  threads.emplace_back([&] {  // verification and purges
    int round = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      if (ms_verify(ms) != MS_OK) failures.add(std::string("verify: ") + ms_last_error_text());
      if (++round % 3 == 0) ms_purge(ms);
      verifies.fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::this_thread::sleep_for(kRunTime);
  stop.store(true);
  for (std::thread& t : threads) t.join();
  for (const std::string& m : failures.messages) ADD_FAILURE() << m;
  EXPECT_GT(loaders_done.load(), 0u);
  EXPECT_GT(reports.load(), 0u);
  EXPECT_GT(loader_stats.load(), 0u);
  EXPECT_GT(verifies.load(), 0u);
  std::printf("[ concurrency ] %llu loaders churned; %llu reports, %llu loader statistics (%llu "
              "with a handle forgotten after 1 024 deaths), %llu verifications from other threads\n",
              static_cast<unsigned long long>(loaders_done.load()),
              static_cast<unsigned long long>(reports.load()),
              static_cast<unsigned long long>(loader_stats.load()),
              static_cast<unsigned long long>(forgotten_handles.load()),
              static_cast<unsigned long long>(verifies.load()));
  ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

}  // namespace
