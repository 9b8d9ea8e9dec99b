// Concurrency stress: 8 threads create, fill, partly free and destroy loader metaspaces of every
// kind, and all of them also allocate from and free into one MS_LOADER_SHARED loader, while
// another thread takes statistics, checks that they add up, runs ms_verify and purges. Every
// block is filled with a pattern owned by its thread and checked before it is freed, so blocks
// handed out twice or overwritten by the library are caught.
//
// StressTest.Bounded runs a few seconds (METASPACE_STRESS_SECONDS overrides) in every test run,
// also under TSan (label `concurrency`); StressTest.Soak runs for METASPACE_SOAK_SECONDS seconds,
// 2 s when that variable is unset (so CI runs it too, briefly):
//   METASPACE_SOAK_SECONDS=600 build/release/tests/concurrency_tests --gtest_filter='*Soak*'
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/accounting.hpp"

namespace {

constexpr int kWorkers = 8;

struct Block {
  char* p;
  size_t n;
  uint8_t pattern;
};

struct Shared {
  ms_metaspace_t* ms = nullptr;
  ms_loader_t* shared_loader = nullptr;
  int checked = 0;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> loaders_created{0};
  std::atomic<uint64_t> verifications{0};
  std::atomic<uint64_t> gc_events{0};
  std::mutex failure_lock;
  std::string failure;

  void fail(const std::string& what) {
    std::lock_guard<std::mutex> g(failure_lock);
    if (failure.empty()) failure = what;
    stop = true;
  }
};

void on_gc(ms_metaspace_t*, size_t, void* user) {
  static_cast<Shared*>(user)->gc_events.fetch_add(1, std::memory_order_relaxed);
}

bool intact(const Block& b) {
  size_t step = b.n > 256 ? b.n / 64 : 1;
  for (size_t i = 0; i < b.n; i += step) {
    if (static_cast<uint8_t>(b.p[i]) != b.pattern) return false;
  }
  return static_cast<uint8_t>(b.p[b.n - 1]) == b.pattern;
}

size_t pick_size(std::mt19937_64& rng) {
  unsigned r = rng() % 100;
  if (r < 75) return 8 + rng() % 200;
  if (r < 97) return 200 + rng() % 4000;
  return 4096 + rng() % 100000;
}

bool allocate_into(Shared& sh, ms_loader_t* l, std::mt19937_64& rng, std::vector<Block>& blocks,
                   uint8_t pattern) {
  size_t n = pick_size(rng);
  ms_space_t space = rng() % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
  char* p = static_cast<char*>(ms_allocate(l, space, n));
  if (p == nullptr) {
    sh.fail(std::string("allocation failed: ") + ms_last_error_text());
    return false;
  }
  std::memset(p, pattern, n);
  blocks.push_back({p, n, pattern});
  sh.allocations.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool free_one(Shared& sh, ms_loader_t* l, std::mt19937_64& rng, std::vector<Block>& blocks) {
  size_t i = rng() % blocks.size();
  Block b = blocks[i];
  if (!intact(b)) {
    sh.fail("block contents changed by someone else");
    return false;
  }
  ms_error_t e = ms_deallocate(l, b.p, b.n);
  if (e != MS_OK) {
    sh.fail(std::string("free failed: ") + ms_last_error_text());
    return false;
  }
  blocks[i] = blocks.back();
  blocks.pop_back();
  return true;
}

void worker(Shared& sh, int id) {
  std::mt19937_64 rng(1000 + id);
  std::vector<Block> in_shared;  // this thread's blocks in the shared loader
  const uint8_t pattern = static_cast<uint8_t>(0x10 + id);
  while (!sh.stop.load(std::memory_order_relaxed)) {
    unsigned kind = rng() % 3;
    ms_loader_t* l = ms_loader_create(sh.ms, static_cast<ms_loader_kind_t>(kind),
                                      rng() % 8 == 0 ? MS_LOADER_SHARED : 0);
    if (l == nullptr) return sh.fail("loader creation failed");
    sh.loaders_created.fetch_add(1, std::memory_order_relaxed);
    std::vector<Block> blocks;
    size_t count = kind == MS_LOADER_MICRO ? 1 + rng() % 8 : 20 + rng() % 400;
    for (size_t i = 0; i < count && !sh.stop.load(std::memory_order_relaxed); i++) {
      if (!allocate_into(sh, l, rng, blocks, pattern)) return;
      if (rng() % 5 == 0 && !free_one(sh, l, rng, blocks)) return;
      if (rng() % 4 == 0) {
        if (in_shared.size() > 200 || (rng() % 3 == 0 && !in_shared.empty())) {
          if (!free_one(sh, sh.shared_loader, rng, in_shared)) return;
        } else if (!allocate_into(sh, sh.shared_loader, rng, in_shared, pattern)) {
          return;
        }
      }
    }
    for (const Block& b : blocks) {
      if (!intact(b)) return sh.fail("block contents changed before loader death");
    }
    if (ms_loader_destroy(l) != MS_OK) return sh.fail("destroy failed");
  }
  while (!in_shared.empty()) {
    if (!free_one(sh, sh.shared_loader, rng, in_shared)) return;
  }
}

void observer(Shared& sh) {
  int round = 0;
  while (!sh.stop.load(std::memory_order_relaxed)) {
    ms_stats_t st;
    if (ms_get_stats(sh.ms, &st) != MS_OK) return sh.fail("ms_get_stats failed");
    for (const ms_space_stats_t* sp : {&st.space[0], &st.space[1], &st.total}) {
      if (sp->committed_bytes != metaspace::test::accounted_bytes(*sp)) {
        return sh.fail("a statistics snapshot does not add up");
      }
    }
    if (ms_verify(sh.ms) != MS_OK) {
      return sh.fail(std::string("ms_verify under load: ") + ms_last_error_text());
    }
    sh.verifications.fetch_add(1, std::memory_order_relaxed);
    if (++round % 4 == 0) ms_purge(sh.ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void run_stress(int checked, double seconds) {
  Shared sh;
  sh.checked = checked;
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = checked;
  s.class_alignment_bytes = 64;
  s.gc_threshold_bytes = 8u << 20;
  s.gc_callback = on_gc;
  s.gc_callback_user = &sh;
  sh.ms = ms_create(&s);
  ASSERT_NE(sh.ms, nullptr) << ms_last_error_text();
  sh.shared_loader = ms_loader_create(sh.ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(sh.shared_loader, nullptr);

  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; i++) threads.emplace_back(worker, std::ref(sh), i);
  threads.emplace_back(observer, std::ref(sh));
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (!sh.stop.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  sh.stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(sh.failure.empty()) << sh.failure;

  ASSERT_EQ(ms_loader_destroy(sh.shared_loader), MS_OK);
  ms_purge(sh.ms);
  ASSERT_EQ(ms_verify(sh.ms), MS_OK) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(sh.ms, &st), MS_OK);
  EXPECT_EQ(st.loaders, 0u);
  EXPECT_EQ(st.total.used_bytes, 0u);
  // Only bookkeeping (remembered dead handles, spare chunk headers) stays.
  EXPECT_EQ(st.total.committed_bytes, st.total.overhead_bytes)
      << "balanced: all loaders dead and purged";
  std::printf("stress (checked=%d): %.1f s, %llu loaders, %llu allocations, %llu verifications, "
              "%llu gc events\n", checked, seconds, (unsigned long long)sh.loaders_created.load(),
              (unsigned long long)sh.allocations.load(),
              (unsigned long long)sh.verifications.load(),
              (unsigned long long)sh.gc_events.load());
  EXPECT_GT(sh.loaders_created.load(), static_cast<uint64_t>(kWorkers));
  EXPECT_GT(sh.verifications.load(), 0u);
  ms_destroy(sh.ms);
}

double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

class StressTest : public ::testing::TestWithParam<int> {};

TEST_P(StressTest, Bounded) { run_stress(GetParam(), env_seconds("METASPACE_STRESS_SECONDS", 3)); }

TEST_P(StressTest, Soak) {
  run_stress(GetParam(), env_seconds("METASPACE_SOAK_SECONDS", 2));
}

INSTANTIATE_TEST_SUITE_P(Modes, StressTest, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param ? "Checked" : "Normal"; });

}  // namespace
