// Fault injection sweep: a fixed workload of a few thousand operations (loaders of every kind
// created, filled, partly freed, destroyed; purges) is run once to count the calls through a
// fault point (commit or reserve), then once more for every k, with the k-th call failing as if
// the kernel had refused it. Every time:
//   - the call that met the fault reports it (NULL from ms_create or ms_allocate with
//     MS_ERR_RESERVE_FAILED / MS_ERR_COMMIT_FAILED in ms_last_error());
//   - ms_verify passes right after it, so every committed byte is accounted for
//     (committed = used + free in chunks + free chunks + free blocks + fences, per space, and
//     the limiter agrees with the commit masks);
//   - the workload goes on, and every later call succeeds;
//   - after all loaders are destroyed and the metaspace purged, nothing is used and (with a
//     reclaiming policy) nothing is committed.
// Checked mode commits each granule run with its own kernel call, so it has many commit points;
// normal mode opens access once per root chunk area.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "os/fault_injection.hpp"

namespace {

using metaspace::os::FaultPoint;
using metaspace::os::fault_point_calls;
using metaspace::os::inject_fault;

constexpr int kOperations = 3000;

struct Config {
  const char* name;
  int checked;
  ms_reclaim_t reclaim;
};

ms_settings_t settings_of(const Config& c) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.checked = c.checked;
  s.reclaim = c.reclaim;
  s.root_chunk_bytes = 256u << 10;
  s.node_bytes = 256u << 10;         // one root chunk per node: a reserve call each
  s.class_space_bytes = 64u << 20;
  s.class_alignment_bytes = 16;
  if (c.reclaim == MS_RECLAIM_NONE) s.commit_granule_bytes = 64u << 10;
  return s;
}

// What one run saw.
struct Outcome {
  uint64_t calls = 0;          // calls through the point during the run
  int faults_met = 0;          // operations that met the injected fault
  int failed_ops = 0;          // operations that failed (must equal faults_met)
  std::string failure;         // first violated expectation, if any
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

    ms_metaspace_t* ms = nullptr;
    while (ms == nullptr) {
      uint64_t before = fault_point_calls(point_);
      ms = ms_create(&s);
      bool met = met_fault(before);
      if (met) {
        expect(ms == nullptr, "ms_create met the fault but succeeded");
        expect(ms_last_error() == expected_error(),
               std::string("ms_create failed with ") + ms_error_name(ms_last_error()));
        if (ms != nullptr) ms_destroy(ms);
        ms = nullptr;
        continue;  // the runtime tries again: it must work now
      }
      if (ms == nullptr) {
        fail(std::string("ms_create failed without a fault: ") + ms_last_error_text());
        break;
      }
    }
    if (ms == nullptr) return finish(out, base);
    ms_ = ms;

    for (int op = 0; op < kOperations && out.failure.empty(); op++) step(rng);

    // Everything dies; nothing may stay used, and with reclaiming nothing committed.
    for (auto& l : loaders_) expect(ms_loader_destroy(l.handle) == MS_OK, "final destroy");
    loaders_.clear();
    ms_purge(ms_);
    check_verify("after destroying everything");
    ms_stats_t st;
    ms_get_stats(ms_, &st);
    expect(st.total.used_bytes == 0 && st.total.free_blocks_bytes == 0, "used after the end");
    if (config_.reclaim != MS_RECLAIM_NONE) {
      // Only bookkeeping (quarantined loader objects, spare chunk headers) stays.
      expect(st.total.committed_bytes == st.total.overhead_bytes,
             "committed after the end: " + std::to_string(st.total.committed_bytes));
    }
    ms_destroy(ms_);
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

  ms_error_t expected_error() const {
    return point_ == FaultPoint::kCommit ? MS_ERR_COMMIT_FAILED : MS_ERR_RESERVE_FAILED;
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

  void check_verify(const char* when) {
    ms_error_t e = ms_verify(ms_);
    if (e != MS_OK) fail(std::string("ms_verify ") + when + ": " + ms_last_error_text());
  }

  void step(std::mt19937& rng) {
    unsigned r = rng() % 100;
    if (loaders_.empty() || (r < 6 && loaders_.size() < 24)) {
      unsigned n = created_++;
      ms_loader_t* l = ms_loader_create(ms_, static_cast<ms_loader_kind_t>(n % 3),
                                        n % 7 == 0 ? MS_LOADER_SHARED : 0);
      expect(l != nullptr, "loader creation failed");
      if (l != nullptr) loaders_.push_back({l, {}});
      return;
    }
    Loader& l = loaders_[rng() % loaders_.size()];
    if (r < 9 && loaders_.size() > 3) {
      expect(ms_loader_destroy(l.handle) == MS_OK, "destroy failed");
      l = std::move(loaders_.back());
      loaders_.pop_back();
      return;
    }
    if (r < 10) {
      ms_purge(ms_);
      return;
    }
    if (r < 30 && !l.blocks.empty()) {
      size_t i = rng() % l.blocks.size();
      auto [p, n] = l.blocks[i];
      expect(ms_deallocate(l.handle, p, n) == MS_OK, "free failed");
      l.blocks[i] = l.blocks.back();
      l.blocks.pop_back();
      return;
    }
    unsigned sr = rng() % 100;
    size_t n = sr < 70 ? 8 + rng() % 256 : sr < 95 ? 256 + rng() % 8192 : 8192 + rng() % 200000;
    ms_space_t space = rng() % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
    uint64_t before = fault_point_calls(point_);
    char* p = static_cast<char*>(ms_allocate(l.handle, space, n));
    bool met = met_fault(before);
    if (p == nullptr) {
      out_->failed_ops++;
      expect(met, std::string("allocation failed without a fault: ") + ms_last_error_text());
      expect(ms_last_error() == expected_error(),
             std::string("allocation failed with ") + ms_error_name(ms_last_error()));
      check_verify("right after the failed call");
      // The same request again: the fault is gone, it must work now.
      before = fault_point_calls(point_);
      p = static_cast<char*>(ms_allocate(l.handle, space, n));
      met_fault(before);
      expect(p != nullptr, std::string("retry failed: ") + ms_last_error_text());
      if (p == nullptr) return;
    } else {
      expect(!met, "an allocation met the fault but succeeded");
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
};

bool fault_injection_compiled_in() {
  inject_fault(FaultPoint::kReserve, 1);
  ms_metaspace_t* ms = ms_create(nullptr);
  inject_fault(FaultPoint::kReserve, 0);
  if (ms == nullptr) return true;
  ms_destroy(ms);
  return false;
}

class FaultSweep : public ::testing::TestWithParam<std::tuple<Config, FaultPoint>> {};

TEST_P(FaultSweep, EveryFaultPointIsReportedAndSurvived) {
  if (!fault_injection_compiled_in()) GTEST_SKIP() << "library built without fault injection";
  auto [config, point] = GetParam();
  const char* point_name = point == FaultPoint::kCommit ? "commit" : "reserve";
  Workload dry(config, point);
  Outcome clean = dry.run(0);
  ASSERT_TRUE(clean.failure.empty()) << clean.failure;
  ASSERT_EQ(clean.failed_ops, 0);
  ASSERT_GT(clean.calls, 0u);
  int covered = 0;
  for (uint64_t k = 1; k <= clean.calls; k++) {
    Workload w(config, point);
    Outcome o = w.run(k);
    ASSERT_TRUE(o.failure.empty()) << config.name << ", " << point_name << " call " << k << " of "
                                   << clean.calls << " fails: " << o.failure;
    ASSERT_EQ(o.faults_met, 1) << "call " << k << ": the fault was not met exactly once";
    covered++;
  }
  std::printf("fault sweep %s/%s: %d fault points covered (%d operations each)\n", config.name,
              point_name, covered, kOperations);
  RecordProperty("fault_points", covered);
}

const Config kConfigs[] = {
    {"checked_balanced", 1, MS_RECLAIM_BALANCED},
    {"checked_aggressive", 1, MS_RECLAIM_AGGRESSIVE},
    {"checked_none", 1, MS_RECLAIM_NONE},
    {"normal_balanced", 0, MS_RECLAIM_BALANCED},
    {"normal_none", 0, MS_RECLAIM_NONE},
};

INSTANTIATE_TEST_SUITE_P(
    Workloads, FaultSweep,
    ::testing::Combine(::testing::ValuesIn(kConfigs),
                       ::testing::Values(FaultPoint::kCommit, FaultPoint::kReserve)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) == FaultPoint::kCommit ? "_commit" : "_reserve");
    });

}  // namespace
