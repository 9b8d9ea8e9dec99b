// Fault injection sweep over every fault point of the os layer (os/fault_injection.hpp: reserve,
// commit, uncommit, protect, release, bookkeeping). A fixed workload (loaders of every kind
// created, filled, partly freed, destroyed; purges) is run once to count the calls through a
// point, then once for every k (or, where a point is called very often, for an even sample of
// k that always includes the first and the last call), with the k-th call failing as if the
// kernel (or the bookkeeping allocator) had refused it. Every time:
//   - a call that needs what was refused reports it with the point's documented error:
//     reserve → MS_ERR_RESERVE_FAILED, commit → MS_ERR_COMMIT_FAILED, bookkeeping →
//     MS_ERR_OUT_OF_MEMORY (NULL from ms_create, ms_loader_create, ms_allocate);
//   - a call that gives something back (uncommit, protect, release) either succeeds or reports
//     the point's error; what could not be given back stays counted;
//   - ms_verify passes right after it (so the accounting identity holds, per space, and the
//     limiter agrees with the commit masks);
//   - the workload goes on: the refused request succeeds when repeated, every later call works;
//   - after all loaders are destroyed and the metaspace purged twice (the second purge retries
//     what the first could not give back), nothing is used and, with a reclaiming policy,
//     nothing is committed.
// Configurations: every reclaim policy × normal/checked × with/without a cap (and a GC
// callback). The normal-mode configurations without a cap sweep every call of every point; the
// others sample at most kSampled calls per point (CI time: the debug build would take minutes);
// METASPACE_FULL_SWEEP=1 sweeps every call everywhere (`make sweep`). Each test prints the
// point's call count.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "os/fault_injection.hpp"

namespace {

using metaspace::os::FaultPoint;
using metaspace::os::fault_point_calls;
using metaspace::os::inject_fault;
using metaspace::os::kFaultPoints;

constexpr int kOperations = 1000;
constexpr uint64_t kSampled = 12;

struct Config {
  const char* name;
  int checked;
  ms_reclaim_t reclaim;
  bool cap;
  bool every_call;  // sweep every k, not a sample
};

const char* point_name(FaultPoint p) {
  switch (p) {
    case FaultPoint::kReserve: return "reserve";
    case FaultPoint::kCommit: return "commit";
    case FaultPoint::kUncommit: return "uncommit";
    case FaultPoint::kProtect: return "protect";
    case FaultPoint::kRelease: return "release";
    case FaultPoint::kBookkeeping: return "bookkeeping";
  }
  return "?";
}

// The error a failure at this point is reported with.
ms_error_t error_of(FaultPoint p) {
  switch (p) {
    case FaultPoint::kReserve: return MS_ERR_RESERVE_FAILED;
    case FaultPoint::kCommit: return MS_ERR_COMMIT_FAILED;
    case FaultPoint::kUncommit: return MS_ERR_COMMIT_FAILED;
    case FaultPoint::kProtect: return MS_ERR_COMMIT_FAILED;
    case FaultPoint::kRelease: return MS_ERR_RESERVE_FAILED;
    case FaultPoint::kBookkeeping: return MS_ERR_OUT_OF_MEMORY;
  }
  return MS_OK;
}

// Points whose failure must fail the call that needed them; the others give memory back, and
// the call may succeed while the memory stays counted.
bool refusing(FaultPoint p) {
  return p == FaultPoint::kReserve || p == FaultPoint::kCommit || p == FaultPoint::kBookkeeping;
}

ms_settings_t settings_of(const Config& c) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = c.checked;
  s.reclaim = c.reclaim;
  s.root_chunk_bytes = 256u << 10;
  s.node_bytes = 256u << 10;         // one root chunk per node: a reserve (and release) each
  s.class_space_bytes = 64u << 20;
  s.class_alignment_bytes = 16;
  if (c.reclaim == MS_RECLAIM_NONE) s.commit_granule_bytes = 64u << 10;
  return s;
}

struct GcLog {
  int calls = 0;
};

void on_gc(ms_metaspace_t* ms, size_t, void* user) {
  static_cast<GcLog*>(user)->calls++;
  ms_stats_t st;
  EXPECT_EQ(ms_get_stats(ms, &st), MS_OK);  // outside the locks: the runtime may look
}

// What one run saw.
struct Outcome {
  uint64_t calls = 0;   // calls through the point during the run
  int faults_met = 0;   // operations that met the injected fault
  std::string failure;  // first violated expectation, if any
};

class Workload {
 public:
  Workload(const Config& config, FaultPoint point) : config_(config), point_(point) {}

  // Runs the whole workload; with target != 0 the target-th call (counted from the first call
  // of this run) through the point fails.
  Outcome run(uint64_t target) {
    Outcome out;
    uint64_t base = fault_point_calls(point_);
    if (target != 0) inject_fault(point_, target);
    target_abs_ = target == 0 ? 0 : base + target;
    out_ = &out;
    std::mt19937 rng(387);
    ms_settings_t s = settings_of(config_);
    if (config_.cap) {
      // Small enough that the workload meets it, with a GC callback below it.
      s.max_committed_bytes = 2u << 20;
      s.gc_threshold_bytes = 1536u << 10;
      s.gc_callback = on_gc;
      s.gc_callback_user = &gc_;
    }

    ms_metaspace_t* ms = nullptr;
    for (int attempt = 0; ms == nullptr && attempt < 3; attempt++) {
      uint64_t before = fault_point_calls(point_);
      ms = ms_create(&s);
      if (met_fault(before)) {
        if (refusing(point_)) expect(ms == nullptr, "ms_create met the fault but succeeded");
        if (ms == nullptr) expect_error("ms_create");
        if (ms == nullptr) continue;  // the runtime tries again: it must work now
      } else if (ms == nullptr) {
        fail(std::string("ms_create failed without a fault: ") + ms_last_error_text());
      }
    }
    if (ms == nullptr) return finish(out, base);
    ms_ = ms;

    for (int op = 0; op < kOperations && out.failure.empty(); op++) step(rng);

    // Everything dies; nothing may stay used, and with reclaiming nothing committed.
    for (auto& l : loaders_) {
      uint64_t before = fault_point_calls(point_);
      ms_error_t e = ms_loader_destroy(l.handle);
      bool met = met_fault(before);
      expect(e == MS_OK || (met && e == error_of(point_)), "final destroy");
    }
    loaders_.clear();
    uint64_t before = fault_point_calls(point_);
    ms_purge(ms_);
    ms_purge(ms_);  // retries what the first purge could not give back
    if (met_fault(before)) check_verify("after the purge that met the fault");
    check_verify("after destroying everything");
    ms_stats_t st;
    ms_get_stats(ms_, &st);
    expect(st.total.used_bytes == 0 && st.total.free_blocks_bytes == 0, "used after the end");
    if (config_.reclaim != MS_RECLAIM_NONE) {
      // Only bookkeeping (remembered dead handles, spare chunk headers) stays.
      expect(st.total.committed_bytes == st.total.overhead_bytes,
             "committed after the end: " + std::to_string(st.total.committed_bytes));
    }
    before = fault_point_calls(point_);
    ms_destroy(ms_);  // a failed unmap here leaks address space, never memory
    met_fault(before);
    ms_ = nullptr;
    return finish(out, base);
  }

 private:
  struct Loader {
    ms_loader_t* handle;
    std::vector<std::pair<char*, size_t>> blocks;
  };

  Outcome finish(Outcome& out, uint64_t base) {
    inject_fault(point_, 0);
    out.calls = fault_point_calls(point_) - base;
    return out;
  }

  bool met_fault(uint64_t before) {
    uint64_t now = fault_point_calls(point_);
    bool met = target_abs_ != 0 && before < target_abs_ && now >= target_abs_;
    if (met) out_->faults_met++;
    return met;
  }

  void fail(const std::string& what) {
    if (out_->failure.empty()) out_->failure = what;
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) fail(what);
  }
  void expect_error(const char* call) {
    expect(ms_last_error() == error_of(point_),
           std::string(call) + " failed with " + ms_error_name(ms_last_error()) + ": " +
               ms_last_error_text());
  }

  void check_verify(const char* when) {
    ms_error_t e = ms_verify(ms_);
    if (e != MS_OK) fail(std::string("ms_verify ") + when + ": " + ms_last_error_text());
  }

  void step(std::mt19937& rng) {
    unsigned r = rng() % 100;
    if (loaders_.empty() || (r < 6 && loaders_.size() < 24)) {
      unsigned n = created_++;
      uint64_t before = fault_point_calls(point_);
      ms_loader_t* l = ms_loader_create(ms_, static_cast<ms_loader_kind_t>(n % 3),
                                        n % 7 == 0 ? MS_LOADER_SHARED : 0);
      bool met = met_fault(before);
      if (met) {
        if (refusing(point_)) expect(l == nullptr, "loader creation met the fault but succeeded");
        if (l == nullptr) expect_error("ms_loader_create");
        check_verify("after a loader creation that met the fault");
      } else {
        expect(l != nullptr, std::string("loader creation failed: ") + ms_last_error_text());
      }
      if (l != nullptr) loaders_.push_back({l, {}});
      return;
    }
    size_t li = rng() % loaders_.size();
    Loader& l = loaders_[li];
    if (r < 9 && loaders_.size() > 3) {
      uint64_t before = fault_point_calls(point_);
      ms_error_t e = ms_loader_destroy(l.handle);
      bool met = met_fault(before);
      expect(e == MS_OK || (met && e == error_of(point_)),
             std::string("destroy: ") + ms_error_name(e));
      if (met) check_verify("after a loader destruction that met the fault");
      if (e == MS_OK) {
        l = std::move(loaders_.back());
        loaders_.pop_back();
      }
      return;
    }
    if (r < 10) {
      uint64_t before = fault_point_calls(point_);
      ms_purge(ms_);
      if (met_fault(before)) check_verify("after a purge that met the fault");
      return;
    }
    if (r < 30 && !l.blocks.empty()) {
      size_t i = rng() % l.blocks.size();
      auto [p, n] = l.blocks[i];
      uint64_t before = fault_point_calls(point_);
      ms_error_t e = ms_deallocate(l.handle, p, n);
      bool met = met_fault(before);
      expect(e == MS_OK || (met && e == error_of(point_)), "free failed");
      if (met) check_verify("after a free that met the fault");
      if (e == MS_OK) {
        l.blocks[i] = l.blocks.back();
        l.blocks.pop_back();
      }
      return;
    }
    unsigned sr = rng() % 100;
    size_t n = sr < 70 ? 8 + rng() % 256 : sr < 95 ? 256 + rng() % 8192 : 8192 + rng() % 200000;
    ms_space_t space = rng() % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    uint64_t before = fault_point_calls(point_);
    char* p = static_cast<char*>(ms_allocate(l.handle, space, n));
    bool met = met_fault(before);
    if (p == nullptr && config_.cap && ms_last_error() == MS_ERR_LIMIT &&
        !(met && refusing(point_))) {
      // At the cap (the refused commit may have given a chunk back, meeting a give-back fault):
      // the runtime was told (GC callback) and unloads the loader.
      expect(gc_.calls > 0, "MS_ERR_LIMIT before any GC callback");
      check_verify("after a refusal at the cap");
      before = fault_point_calls(point_);
      expect(ms_loader_destroy(l.handle) == MS_OK, "destroy at the cap");
      if (met_fault(before)) check_verify("after a destruction at the cap that met the fault");
      l = std::move(loaders_.back());
      loaders_.pop_back();
      return;
    }
    if (p == nullptr) {
      expect(met, std::string("allocation failed without a fault: ") + ms_last_error_text());
      expect_error("ms_allocate");
      check_verify("right after the failed call");
      // The same request again: the fault is gone, it must work now.
      before = fault_point_calls(point_);
      p = static_cast<char*>(ms_allocate(l.handle, space, n));
      met_fault(before);
      if (p == nullptr && config_.cap && ms_last_error() == MS_ERR_LIMIT) {
        check_verify("after a refusal at the cap");
        return;
      }
      expect(p != nullptr, std::string("retry failed: ") + ms_last_error_text());
      if (p == nullptr) return;
    } else if (met) {
      expect(!refusing(point_), "an allocation met the fault but succeeded");
      check_verify("after an allocation that met the fault");
    }
    // Touch it: in checked mode, memory that is not really committed faults.
    std::memset(p, 0x6B, n < 4096 ? n : 64);
    p[n - 1] = 0x6B;
    l.blocks.push_back({p, n});
  }

  const Config config_;
  const FaultPoint point_;
  uint64_t target_abs_ = 0;
  Outcome* out_ = nullptr;
  ms_metaspace_t* ms_ = nullptr;
  std::vector<Loader> loaders_;
  unsigned created_ = 0;
  GcLog gc_;
};

bool fault_injection_compiled_in() {
  inject_fault(FaultPoint::kReserve, 1);
  ms_metaspace_t* ms = ms_create(nullptr);
  inject_fault(FaultPoint::kReserve, 0);
  if (ms == nullptr) return true;
  ms_destroy(ms);
  return false;
}

// The calls to fail: all of them, or an even sample that includes the first and the last.
std::vector<uint64_t> calls_to_fail(uint64_t calls, bool every_call) {
  std::vector<uint64_t> ks;
  const char* full = std::getenv("METASPACE_FULL_SWEEP");
  if (full != nullptr && std::strcmp(full, "1") == 0) every_call = true;
  if (every_call || calls <= kSampled) {
    for (uint64_t k = 1; k <= calls; k++) ks.push_back(k);
    return ks;
  }
  for (uint64_t i = 0; i < kSampled; i++) ks.push_back(1 + i * (calls - 1) / (kSampled - 1));
  return ks;
}

class FaultSweep : public ::testing::TestWithParam<std::tuple<Config, FaultPoint>> {};

TEST_P(FaultSweep, EveryFaultPointIsReportedAndSurvived) {
  if (!fault_injection_compiled_in()) GTEST_SKIP() << "library built without fault injection";
  auto [config, point] = GetParam();
  Workload dry(config, point);
  Outcome clean = dry.run(0);
  ASSERT_TRUE(clean.failure.empty()) << clean.failure;
  std::vector<uint64_t> ks = calls_to_fail(clean.calls, config.every_call);
  for (uint64_t k : ks) {
    Workload w(config, point);
    Outcome o = w.run(k);
    ASSERT_TRUE(o.failure.empty()) << config.name << ", " << point_name(point) << " call " << k
                                   << " of " << clean.calls << " fails: " << o.failure;
    ASSERT_EQ(o.faults_met, 1) << "call " << k << ": the fault was not met exactly once";
  }
  std::printf("fault sweep %s/%s: %llu calls in the workload, %zu failed in turn (%d "
              "operations each)\n", config.name, point_name(point),
              static_cast<unsigned long long>(clean.calls), ks.size(), kOperations);
  RecordProperty("calls", std::to_string(clean.calls));
  RecordProperty("swept", std::to_string(ks.size()));
}

const Config kConfigs[] = {
    {"normal_none", 0, MS_RECLAIM_NONE, false, true},
    {"normal_balanced", 0, MS_RECLAIM_BALANCED, false, true},
    {"normal_aggressive", 0, MS_RECLAIM_AGGRESSIVE, false, true},
    {"checked_none", 1, MS_RECLAIM_NONE, false, false},
    {"checked_balanced", 1, MS_RECLAIM_BALANCED, false, false},
    {"checked_aggressive", 1, MS_RECLAIM_AGGRESSIVE, false, false},
    {"normal_none_cap", 0, MS_RECLAIM_NONE, true, false},
    {"normal_balanced_cap", 0, MS_RECLAIM_BALANCED, true, false},
    {"normal_aggressive_cap", 0, MS_RECLAIM_AGGRESSIVE, true, false},
    {"checked_none_cap", 1, MS_RECLAIM_NONE, true, false},
    {"checked_balanced_cap", 1, MS_RECLAIM_BALANCED, true, false},
    {"checked_aggressive_cap", 1, MS_RECLAIM_AGGRESSIVE, true, false},
};

std::vector<FaultPoint> all_points() {
  std::vector<FaultPoint> v;
  for (int p = 0; p < kFaultPoints; p++) v.push_back(static_cast<FaultPoint>(p));
  return v;
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, FaultSweep,
    ::testing::Combine(::testing::ValuesIn(kConfigs), ::testing::ValuesIn(all_points())),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" +
             point_name(std::get<1>(info.param));
    });

}  // namespace
