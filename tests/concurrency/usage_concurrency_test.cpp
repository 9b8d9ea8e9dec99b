// ms_get_usage and ms_get_stats polled while loaders are created, fill, free and die on other
// threads (run under TSan with the `concurrency` label): the counters are read without loader
// locks, the identity holds in every snapshot, and once the workers stop, ms_get_usage equals the
// snapshot's totals exactly.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/accounting.hpp"
#include "support/failures.hpp"
#include "support/observer_calls.hpp"

namespace {

using metaspace::test::Failures;

TEST(UsageConcurrency, CountersAgreeWithTheSnapshotUnderConcurrentLoaders) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = 256;  // gaps: non-class blocks in class space, counted there
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  std::atomic<bool> stop{false};
  Failures failures;
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);

  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<ms_loader_t*, std::vector<std::pair<void*, size_t>>>> mine;
    while (!stop.load()) {
      unsigned dice = rng() % 100;
      if (mine.empty() || dice < 20) {
        ms_loader_t* l = ms_loader_create(ms, dice % 3 == 0 ? MS_LOADER_MICRO : MS_LOADER_STANDARD, 0);
        if (l == nullptr) { failures.add(ms_last_error_text()); return; }
        mine.push_back({l, {}});
      } else if (dice < 75) {
        auto& [l, blocks] = mine[rng() % mine.size()];
        for (int k = 0; k < 20; k++) {
          ms_space_t sp = k == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
          size_t bytes = k == 0 ? 500 + rng() % 300 : 8 + rng() % 400;
          void* p = ms_allocate(l, sp, bytes);
          if (p == nullptr) { failures.add(ms_last_error_text()); return; }
          blocks.push_back({p, bytes});
        }
        void* p = ms_allocate(shared, MS_SPACE_NONCLASS, 24);
        if (p == nullptr) failures.add(ms_last_error_text());
      } else if (dice < 90) {
        auto& [l, blocks] = mine[rng() % mine.size()];
        for (int k = 0; k < 5 && !blocks.empty(); k++) {
          auto [p, bytes] = blocks.back();
          blocks.pop_back();
          if (ms_deallocate(l, p, bytes) != MS_OK) failures.add(ms_last_error_text());
        }
      } else {
        size_t i = rng() % mine.size();
        if (ms_loader_destroy(mine[i].first) != MS_OK) failures.add(ms_last_error_text());
        mine.erase(mine.begin() + static_cast<long>(i));
      }
    }
    for (auto& [l, blocks] : mine) ms_loader_destroy(l);
  };

  auto observer = [&] {
    int rounds = 0;
    while (!stop.load()) {
      ms_usage_t u{};
      u.size = sizeof u;
      if (ms_get_usage(ms, &u) != MS_OK) failures.add(ms_last_error_text());
      if (u.total.used_bytes > u.total.committed_bytes ||
          u.total.committed_bytes > u.total.reserved_bytes) {
        failures.add("usage: used " + std::to_string(u.total.used_bytes) + ", committed " +
                     std::to_string(u.total.committed_bytes) + ", reserved " +
                     std::to_string(u.total.reserved_bytes));
      }
      if (++rounds % 16 == 0) {
        ms_stats_t st;
        if (ms_get_stats(ms, &st) != MS_OK) failures.add(ms_last_error_text());
        for (const ms_space_stats_t* sp : {&st.space[0], &st.space[1], &st.total}) {
          size_t sum = metaspace::test::accounted_bytes(*sp);
          if (sum != sp->committed_bytes || sp->free_in_chunks_bytes > sp->committed_bytes) {
            failures.add("identity broken under load: committed " +
                         std::to_string(sp->committed_bytes) + ", free in chunks " +
                         std::to_string(sp->free_in_chunks_bytes));
          }
        }
      }
      if (rounds % 256 == 0 && ms_verify(ms) != MS_OK) failures.add(ms_last_error_text());
    }
  };

  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 3; t++) threads.emplace_back(worker, 100 + t);
  threads.emplace_back(observer);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop.store(true);
  for (auto& t : threads) t.join();
  for (const std::string& f : failures.messages) ADD_FAILURE() << f;

  // Quiet now: after one snapshot the counters are exact, and usage is the snapshot's.
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  ms_usage_t u{};
  u.size = sizeof u;
  ASSERT_EQ(ms_get_usage(ms, &u), MS_OK);
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(u.space[i].used_bytes, st.space[i].used_bytes) << "space " << i;
    EXPECT_EQ(u.space[i].committed_bytes, st.space[i].committed_bytes) << "space " << i;
    EXPECT_EQ(u.space[i].reserved_bytes, st.space[i].reserved_bytes) << "space " << i;
  }
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_loader_destroy(shared);
  ASSERT_EQ(ms_get_usage(ms, &u), MS_OK);
  EXPECT_EQ(u.total.used_bytes, 0u);
  ms_destroy(ms);
}

// Every call with a metaspace handle first checks that it names a live metaspace, without a lock
// (live_metaspaces::state_of). Pollers of one metaspace meet other threads that create and
// destroy metaspaces of their own (the slots and the remembered destroyed addresses change under
// them): every poll of the live one succeeds, every call with a destroyed one says so.
TEST(UsageConcurrency, HandleChecksWhileOtherMetaspacesComeAndGo) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 16u << 20;
  ms_metaspace_t* polled = ms_create(&s);
  ASSERT_NE(polled, nullptr) << ms_last_error_text();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> destroyed{0};
  Failures failures;
  auto churner = [&] {
    while (!stop.load()) {
      ms_metaspace_t* ms = ms_create(&s);
      if (ms == nullptr) { failures.add(ms_last_error_text()); return; }
      ms_loader_t* l = ms_loader_create(ms, MS_LOADER_MICRO, 0);
      if (l == nullptr || ms_allocate(l, MS_SPACE_NONCLASS, 64) == nullptr) {
        failures.add(ms_last_error_text());
        return;
      }
      // Remembered while among the last 64 destroyed; a churner preempted for a time slice may
      // see the other make 64 more, so the count decides what to expect. Never MS_OK: the
      // stale handle must not name a metaspace created since.
      uint64_t before = destroyed.load();
      ms_destroy(ms);
      destroyed.fetch_add(1);
      ms_error_t e = ms_verify(ms);
      uint64_t after = destroyed.load();
      bool remembered = after - before < 60;  // the other churner's uncounted destruction: 1
      bool as_promised = e == MS_ERR_DESTROYED || (!remembered && e == MS_ERR_INVALID_ARGUMENT);
      if (!as_promised) {
        failures.add(std::string("a destroyed metaspace: ") + ms_error_name(e) + " " +
                     ms_last_error_text());
      }
    }
  };
  auto poller = [&] {
    while (!stop.load()) {
      ms_usage_t u{};
      u.size = sizeof u;
      if (ms_get_usage(polled, &u) != MS_OK) failures.add(ms_last_error_text());
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(churner);
  threads.emplace_back(churner);
  threads.emplace_back(poller);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  stop.store(true);
  for (auto& t : threads) t.join();
  for (const std::string& f : failures.messages) ADD_FAILURE() << f;
  EXPECT_EQ(ms_verify(polled), MS_OK) << ms_last_error_text();
  ms_destroy(polled);
}

// A monitor polling during shutdown: observers call ms_get_usage, ms_get_stats and ms_verify on
// a metaspace until they see MS_ERR_DESTROYED while another thread destroys it. ms_destroy takes
// it out of the live ones (later calls get MS_ERR_DESTROYED) and waits for the calls in flight;
// before, the observers read the freed metaspace (a heap-use-after-free under ASan in
// Metaspace::usage, space_totals, ClassSpace::verify; a crash or a hang in release). Rounds:
// METASPACE_OBSERVER_ROUNDS.
TEST(UsageConcurrency, ObserversAcrossDestroy) {
  // 10 000 rounds take ~1 s in release, ~90 s under TSan on a loaded machine: sanitized builds
  // run 2 000 unless told otherwise.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  uint64_t rounds = 2000;
#else
  uint64_t rounds = 10000;
#endif
  if (const char* env = std::getenv("METASPACE_OBSERVER_ROUNDS")) rounds = std::strtoull(env, nullptr, 10);
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = 16u << 20;
  constexpr int kObservers = 3;
  std::atomic<ms_metaspace_t*> current{nullptr};
  std::atomic<uint64_t> round{0};
  std::atomic<uint64_t> seen[kObservers];
  std::atomic<uint64_t> acked[kObservers];
  std::atomic<uint64_t> successes{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  for (int i = 0; i < kObservers; i++) {
    seen[i] = 0;
    acked[i] = 0;
  }
  Failures failures;
  auto observer = [&](int me) {
    while (!stop.load(std::memory_order_acquire)) {
      uint64_t r = round.load(std::memory_order_acquire);
      ms_metaspace_t* ms = current.load(std::memory_order_acquire);
      if (r == 0 || acked[me].load() >= r) {
        std::this_thread::yield();
        continue;
      }
      ms_error_t e = metaspace::test::observe(ms, me);
      seen[me].store(r);
      if (e == MS_ERR_DESTROYED) {
        acked[me].store(r);
      } else if (e == MS_OK) {
        successes.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::yield();  // a poller, not a spinner: the destroying thread gets its turn
      } else {
        failures.add(std::string("observer: ") + ms_error_name(e) + " " + ms_last_error_text());
        failed.store(true);
        acked[me].store(r);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kObservers; i++) threads.emplace_back(observer, i);
  std::mt19937 random(38);
  for (uint64_t r = 1; r <= rounds && !failed.load(); r++) {
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l, nullptr);
    ASSERT_NE(ms_allocate(l, MS_SPACE_CLASS, 600), nullptr);
    current.store(ms, std::memory_order_release);
    round.store(r, std::memory_order_release);
    // Destroyed once every observer has been in, after a varying pause: sometimes amid calls.
    for (int i = 0; i < kObservers; i++) {
      while (seen[i].load() < r) std::this_thread::yield();
    }
    for (unsigned spin = random() % 200; spin > 0; spin--) std::atomic_signal_fence(std::memory_order_seq_cst);
    ms_destroy(ms);
    for (int i = 0; i < kObservers; i++) {
      while (acked[i].load() < r) std::this_thread::yield();
    }
  }
  stop.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  for (const std::string& f : failures.messages) ADD_FAILURE() << f;
  EXPECT_GE(successes.load(), rounds);
  std::printf("%llu rounds, %llu successful observations\n", static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(successes.load()));
}

}  // namespace
