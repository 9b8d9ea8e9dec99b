// No C++ exception leaves the library: every heap allocation the library makes can
// fail, and the C call that made it returns NULL / MS_ERR_OUT_OF_MEMORY, ms_verify passes, no
// loader or block appears or disappears, and the same call succeeds once memory is back.
//
// The failures are made by replacing the global operator new in this executable (the library
// is linked statically, so its allocations come here): the k-th allocation from now throws
// std::bad_alloc, for every k until the call needs no more. A second sweep does the same through
// the library's own seam for bookkeeping (os::FaultPoint::kBookkeeping), and a third test runs
// the library under a real data-segment limit (setrlimit RLIMIT_DATA) in a child process.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "os/fault_injection.hpp"

namespace {

// 0: off. Otherwise the allocation that brings it to 0 fails. Only the test thread arms it.
thread_local long t_fail_countdown = 0;
thread_local long t_allocations = 0;

bool fail_this_allocation() {
  t_allocations++;
  return t_fail_countdown > 0 && --t_fail_countdown == 0;
}

}  // namespace

void* operator new(size_t n) {
  if (fail_this_allocation()) throw std::bad_alloc();
  if (void* p = std::malloc(n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (fail_this_allocation()) return nullptr;
  return std::malloc(n != 0 ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(size_t n, std::align_val_t a) {
  if (fail_this_allocation()) throw std::bad_alloc();
  size_t align = static_cast<size_t>(a);
  if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using metaspace::os::FaultPoint;

// What must not change when a call fails.
struct Observed {
  size_t loaders = 0;
  size_t used = 0;
  bool operator==(const Observed&) const = default;
};

Observed observe(ms_metaspace_t* ms) {
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), MS_OK) << ms_last_error_text();
  return {st.loaders, st.total.used_bytes};
}

// How a sweep makes the k-th allocation from now fail: arm(k), then disarm() says whether the
// failure was consumed (the call made at least k allocations).
struct Injector {
  virtual void arm(long k) = 0;
  virtual bool disarm() = 0;
};

// Through the replaced operator new.
struct HeapInjector : Injector {
  void arm(long k) override { t_fail_countdown = k; }
  bool disarm() override {
    bool consumed = t_fail_countdown == 0;
    t_fail_countdown = 0;
    return consumed;
  }
};

// Through the library's bookkeeping seam.
struct BookkeepingInjector : Injector {
  uint64_t calls_at_arm = 0;
  long k = 0;
  void arm(long nth) override {
    k = nth;
    calls_at_arm = metaspace::os::fault_point_calls(FaultPoint::kBookkeeping);
    metaspace::os::inject_fault(FaultPoint::kBookkeeping, static_cast<uint64_t>(nth));
  }
  bool disarm() override {
    metaspace::os::inject_fault(FaultPoint::kBookkeeping, 0);
    return metaspace::os::fault_point_calls(FaultPoint::kBookkeeping) - calls_at_arm >=
           static_cast<uint64_t>(k);
  }
};

// Never fails anything: runs the workload to count the seam's calls.
struct NoInjector : Injector {
  void arm(long) override {}
  bool disarm() override { return false; }
};

// Counts the failure points the sweeps went through.
struct Sweep {
  Injector& inject;
  // Whether a failed call must also leave the metaspace consistent and unchanged (both sweeps
  // do: the heap sweep found root areas carved but unknown and nodes half-added to the node map
  // until those paths made room before changing anything).
  bool require_consistency;
  int points = 0;
  int inconsistent = 0;
  // Runs `call` with the k-th allocation failing for k = 1, 2, ... until it succeeds without
  // reaching k. `call` returns true on success; on failure the error must be
  // MS_ERR_OUT_OF_MEMORY and the metaspace (if any) consistent and unchanged.
  // kOnce: the call cannot be repeated once it succeeded (a free: the next one would be a
  // double free), so a failure the library absorbed ends the sweep of that call.
  enum class Repeat { kWhileAbsorbed, kOnce };
  void every_point(ms_metaspace_t* ms, const char* what, const std::function<bool()>& call,
                   Repeat repeat = Repeat::kWhileAbsorbed) {
    for (long k = 1;; k++) {
      Observed before = ms != nullptr ? observe(ms) : Observed{};
      inject.arm(k);
      bool ok = call();
      bool consumed = inject.disarm();
      if (ok) {
        if (!consumed || repeat == Repeat::kOnce) return;
        continue;  // the failure hit an allocation whose failure the library absorbs
      }
      points++;
      ASSERT_EQ(ms_last_error(), MS_ERR_OUT_OF_MEMORY) << what << " k=" << k << ": "
                                                        << ms_last_error_text();
      if (ms != nullptr) {
        bool consistent = ms_verify(ms) == MS_OK;
        if (require_consistency) {
          ASSERT_TRUE(consistent) << what << " k=" << k << ": " << ms_last_error_text();
        } else if (!consistent) {
          if (inconsistent++ == 0) {
            std::printf("first inconsistency after a failed %s (k=%ld): %s\n", what, k,
                        ms_last_error_text());
          }
        }
        if (consistent) {
          ASSERT_TRUE(observe(ms) == before) << what << " k=" << k << " changed the metaspace";
        }
      }
      ASSERT_LT(k, 10000) << what << ": never succeeds";
    }
  }
};

void workload(Sweep& sweep, int checked, ms_reclaim_t reclaim) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = checked;
  s.reclaim = reclaim;
  ms_metaspace_t* ms = nullptr;
  sweep.every_point(nullptr, "ms_create", [&] { return (ms = ms_create(&s)) != nullptr; });
  ASSERT_NE(ms, nullptr);
  std::vector<ms_loader_t*> loaders;
  std::vector<std::pair<void*, size_t>> blocks;
  for (int i = 0; i < 6; i++) {
    ms_loader_t* l = nullptr;
    auto kind = static_cast<ms_loader_kind_t>(i % MS_LOADER_KIND_COUNT);
    sweep.every_point(ms, "ms_loader_create",
                      [&] { return (l = ms_loader_create(ms, kind, i % 2 ? MS_LOADER_SHARED : 0)) != nullptr; });
    ASSERT_NE(l, nullptr);
    loaders.push_back(l);
    for (int j = 0; j < 40; j++) {
      size_t n = 8 + static_cast<size_t>((i * 131 + j * 71) % 3000);
      auto space = static_cast<ms_space_t>(j % 2);
      void* p = nullptr;
      sweep.every_point(ms, "ms_allocate",
                        [&] { return (p = ms_allocate(l, space, n)) != nullptr; });
      ASSERT_NE(p, nullptr);
      std::memset(p, 0x11, n);
      if (j % 3 == 0) {
        // A free whose medium bins could not be made files the block in the tree and succeeds.
        sweep.every_point(ms, "ms_deallocate", [&] { return ms_deallocate(l, p, n) == MS_OK; },
                          Sweep::Repeat::kOnce);
      }
    }
  }
  std::string text;
  // A callback must not throw into the library (metaspace.h): an allocation failure of the
  // test's own string is swallowed here, leaving the text short.
  auto append = [](void* user, const char* t, size_t n) {
    try {
      static_cast<std::string*>(user)->append(t, n);
    } catch (const std::bad_alloc&) {
    }
  };
  sweep.every_point(ms, "ms_get_stats", [&] {
    ms_stats_t st;
    return ms_get_stats(ms, &st) == MS_OK;
  });
  sweep.every_point(ms, "ms_loader_get_stats", [&] {
    ms_loader_stats_t st;
    return ms_loader_get_stats(loaders[0], &st) == MS_OK;
  });
  sweep.every_point(ms, "ms_print_report_cb", [&] {
    text.clear();
    ms_report_options_t o;
    ms_report_options_init(&o);
    o.per_loader = 1;
    return ms_print_report_cb(ms, append, &text, &o) == MS_OK;
  });
  sweep.every_point(ms, "ms_write_report_json_cb", [&] {
    text.clear();
    return ms_write_report_json_cb(ms, append, &text, nullptr) == MS_OK;
  });
  bool consistent = sweep.inconsistent == 0;
  if (consistent) sweep.every_point(ms, "ms_verify", [&] { return ms_verify(ms) == MS_OK; });
  for (size_t i = 0; i < loaders.size(); i += 2) {
    sweep.every_point(ms, "ms_loader_destroy",
                      [&] { return ms_loader_destroy(loaders[i]) == MS_OK; }, Sweep::Repeat::kOnce);
  }
  sweep.every_point(ms, "ms_purge", [&] {
    ms_purge(ms);
    return true;
  });
  if (consistent) EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

struct Config {
  int checked;
  ms_reclaim_t reclaim;
};

class ApiOutOfMemory : public ::testing::TestWithParam<Config> {};

TEST_P(ApiOutOfMemory, EveryHeapAllocationFailureIsAnErrorCode) {
  HeapInjector heap;
  Sweep sweep{heap, true};
  workload(sweep, GetParam().checked, GetParam().reclaim);
  std::printf("heap allocation failure points: %d, %d left ms_verify failing\n", sweep.points,
              sweep.inconsistent);
  EXPECT_GT(sweep.points, 0) << "no call allocated: the sweep tested nothing";
}

TEST_P(ApiOutOfMemory, EveryBookkeepingSeamFailureIsAnErrorCode) {
  uint64_t calls_before = metaspace::os::fault_point_calls(FaultPoint::kBookkeeping);
  {
    NoInjector none;
    Sweep probe{none, true};
    workload(probe, GetParam().checked, GetParam().reclaim);
  }
  if (metaspace::os::fault_point_calls(FaultPoint::kBookkeeping) == calls_before) {
    GTEST_SKIP() << "no bookkeeping allocation goes through os::FaultPoint::kBookkeeping yet";
  }
  BookkeepingInjector bookkeeping;
  Sweep sweep{bookkeeping, true};
  workload(sweep, GetParam().checked, GetParam().reclaim);
  std::printf("bookkeeping seam failure points: %d\n", sweep.points);
  EXPECT_GT(sweep.points, 0);
}

std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  static const char* const kReclaim[] = {"None", "Balanced", "Aggressive"};
  return std::string(info.param.checked ? "Checked" : "Normal") + kReclaim[info.param.reclaim];
}

INSTANTIATE_TEST_SUITE_P(Configs, ApiOutOfMemory,
                         ::testing::Values((Config{0, MS_RECLAIM_BALANCED}),
                                           (Config{1, MS_RECLAIM_BALANCED}),
                                           (Config{0, MS_RECLAIM_AGGRESSIVE}),
                                           (Config{0, MS_RECLAIM_NONE})),
                         config_name);

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MS_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MS_UNDER_SANITIZER 1
#endif
#endif

// Allocation failure must surface as an error code, whatever the setting: under a data-segment limit a
// child creates loaders and allocates until the library refuses; every refusal must be an error
// code (an escaping std::bad_alloc would end the child with SIGABRT).
TEST(ApiMemoryLimit, HeapExhaustionUnderRlimitIsAnErrorNotAnAbort) {
#ifdef MS_UNDER_SANITIZER
  GTEST_SKIP() << "sanitizer runtimes reserve terabytes of shadow memory: no data limit fits";
#else
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit limit{64u << 20, 64u << 20};
    if (setrlimit(RLIMIT_DATA, &limit) != 0) _exit(10);
    ms_settings_t s;
    ms_settings_init(&s);
    s.class_space_bytes = 16u << 20;
    ms_metaspace_t* ms = ms_create(&s);
    if (ms == nullptr) _exit(ms_last_error() == MS_ERR_OUT_OF_MEMORY ||
                                     ms_last_error() == MS_ERR_RESERVE_FAILED ? 0 : 11);
    int refusals = 0;
    for (int i = 0; i < 2000000 && refusals < 100; i++) {
      ms_loader_t* l = ms_loader_create(ms, MS_LOADER_MICRO, 0);
      if (l == nullptr || ms_allocate(l, MS_SPACE_NONCLASS, 200) == nullptr) {
        ms_error_t e = ms_last_error();
        if (e != MS_ERR_OUT_OF_MEMORY && e != MS_ERR_COMMIT_FAILED &&
            e != MS_ERR_RESERVE_FAILED && e != MS_ERR_CLASS_SPACE_FULL) {
          std::fprintf(stderr, "unexpected error %s\n", ms_last_error_text());
          _exit(12);
        }
        refusals++;
      }
    }
    if (refusals == 0) _exit(13);  // the limit was never reached: the test tested nothing
    // (ms_verify is not asked here: see Sweep::require_consistency.)
    ms_destroy(ms);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status)
                                 << " (an exception crossed the C API?)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

}  // namespace
