// fork() without exec while other threads are inside the library (a runtime that forks workers
// while it loads classes). The child has only the thread that forked; before the fork handlers
// (src/api/fork_handlers.hpp) a lock another thread held at the fork stayed held in the child,
// and 32 of 40 children hung in their first call that took it. Each child here checks the
// metaspace and uses every kind of loader the parent's threads were using, under a watchdog.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "os/fork_gate.hpp"
#include "support/accounting.hpp"

namespace metaspace::test {
namespace {

// Exit codes of a child, one per check; 0 when all hold. A child stuck for 20 s dies of SIGALRM.
enum ChildFailure {
  kVerifyAfterFork = 10,
  kIdentity,
  kSharedAllocate,
  kOwnLoader,
  kVerifyAtEnd,
};

bool identity_holds(ms_metaspace_t* ms) {
  ms_stats_t st;
  if (ms_get_stats(ms, &st) != MS_OK) return false;
  for (const ms_space_stats_t& sp : st.space) {
    if (accounted_bytes(sp) != sp.committed_bytes) return false;
  }
  return true;
}

// What the child does: check, then use the shared loader (whose windows belonged to threads the
// child does not have), a loader of its own with frees and reuse, purge, check again.
int child_work(ms_metaspace_t* ms, ms_loader_t* shared) {
  alarm(20);
  if (ms_verify(ms) != MS_OK) return kVerifyAfterFork;
  if (!identity_holds(ms)) return kIdentity;
  for (int i = 0; i < 200; i++) {
    auto* p = static_cast<char*>(ms_allocate(shared, static_cast<ms_space_t>(i & 1), 48));
    if (p == nullptr) return kSharedAllocate;
    std::memset(p, 0x5A, 48);
  }
  ms_loader_t* own = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  if (own == nullptr) return kOwnLoader;
  for (int i = 0; i < 100; i++) {
    void* p = ms_allocate(own, MS_SPACE_NONCLASS, 64 + 8 * (i % 20));
    if (p == nullptr || ms_deallocate(own, p, 64 + 8 * (i % 20)) != MS_OK) return kOwnLoader;
    if (ms_allocate(own, MS_SPACE_CLASS, 600) == nullptr) return kOwnLoader;
  }
  if (ms_loader_destroy(own) != MS_OK) return kOwnLoader;
  ms_purge(ms);
  if (ms_verify(ms) != MS_OK || !identity_holds(ms)) return kVerifyAtEnd;
  return 0;
}

// Two threads load and unload classes as fast as they can (own loaders with frees and reuse,
// a shared loader, purges, statistics: every lock the library has), while the main thread forks.
TEST(Fork, AChildOfAProcessWhoseThreadsAreInsideTheLibraryCanUseIt) {
  constexpr int kForks = 30;
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = MS_RECLAIM_AGGRESSIVE;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<size_t> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([&, t] {
      std::minstd_rand rng(static_cast<unsigned>(t + 1));
      while (!stop.load(std::memory_order_relaxed)) {
        ms_loader_t* l = ms_loader_create(ms, t == 0 ? MS_LOADER_STANDARD : MS_LOADER_MICRO, 0);
        if (l == nullptr) {
          failures++;
          return;
        }
        for (int i = 0; i < 100; i++) {
          size_t n = 8 * (1 + rng() % 40);
          void* p = ms_allocate(l, static_cast<ms_space_t>(i & 1), n);
          if (p == nullptr) failures++;
          if (i % 3 == 0 && p != nullptr && ms_deallocate(l, p, n) != MS_OK) failures++;
          if (ms_allocate(shared, MS_SPACE_NONCLASS, 8 * (1 + rng() % 60)) == nullptr) failures++;
        }
        if (ms_loader_destroy(l) != MS_OK) failures++;
        if (rng() % 4 == 0) ms_purge(ms);
        ms_usage_t u;
        ms_get_usage(ms, &u);
        if (rng() % 8 == 0) {
          ms_stats_t st;
          (void)ms_get_stats(ms, &st);
        }
      }
    });
  }
  std::minstd_rand rng(7);
  int hung = 0, failed = 0;
  for (int f = 0; f < kForks; f++) {
    usleep(500 + rng() % 3000);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(child_work(ms, shared));
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
      hung++;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ADD_FAILURE() << "fork " << f << ": child status " << status << " (ChildFailure codes from "
                    << kVerifyAfterFork << ")";
      failed++;
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(hung, 0) << "children stuck in the library of " << kForks;
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  EXPECT_TRUE(identity_holds(ms));
  ms_destroy(ms);
}

// The gate itself: a fork waits until a thread inside the library has left. The thread writes a
// flag just before it leaves; the child's copy of memory must hold it. Without the gate the fork
// comes at once (the thread sleeps 100 ms inside) and the child sees the flag unset.
TEST(Fork, WaitsUntilNoOtherThreadIsInsideTheLibrary) {
  ms_metaspace_t* ms = ms_create(nullptr);  // installs the fork handlers
  ASSERT_NE(ms, nullptr);
  std::atomic<bool> entered{false};
  std::atomic<bool> left{false};
  std::thread inside_thread([&] {
    os::InsideLibrary inside;
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = true;
  });
  while (!entered) std::this_thread::yield();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(left.load() ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the fork came while another thread was inside the library (status " << status << ")";
  inside_thread.join();
  ms_destroy(ms);
}

// A runtime's GC (the threshold callback) may wait for a thread that forks. The callback runs
// outside the gate, as it runs outside every lock: the fork does not wait for it. Were it inside,
// the two would wait for each other; after 10 s the test lets the callback go and fails.
TEST(Fork, DoesNotWaitForAThreadInTheGcCallback) {
  struct Runtime {
    std::atomic<bool> in_callback{false};
    std::atomic<bool> forked{false};
  } rt;
  ms_settings_t s;
  ms_settings_init(&s);
  s.gc_threshold_bytes = 1u << 20;
  s.gc_callback = [](ms_metaspace_t*, size_t, void* user) {
    auto* r = static_cast<Runtime*>(user);
    if (r->in_callback.exchange(true)) return;
    while (!r->forked) std::this_thread::yield();
  };
  s.gc_callback_user = &rt;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  std::thread gc_thread([&] {
    for (int i = 0; i < 64 && !rt.in_callback; i++) (void)ms_allocate(l, MS_SPACE_NONCLASS, 64 * 1024);
  });
  while (!rt.in_callback) std::this_thread::yield();
  std::atomic<bool> fork_returned{false};
  pid_t child = -1;
  std::thread forker([&] {
    child = fork();
    if (child == 0) _exit(0);
    fork_returned = true;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!fork_returned && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(fork_returned.load()) << "the fork waited for the thread in the GC callback";
  rt.forked = true;
  forker.join();
  gc_thread.join();
  ASSERT_GT(child, 0);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(ms_loader_destroy(l), MS_OK);
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
