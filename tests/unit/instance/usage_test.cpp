// ms_get_usage (O(1) counters) against the full snapshot, and the snapshot's locking: it visits
// loaders one at a time and, for totals, never waits for a loader at all.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <future>
#include <mutex>
#include <thread>

#include "instance/metaspace.hpp"
#include "support/accounting.hpp"
#include "support/layer_fixtures.hpp"
#include "unit/stats/random_workload.hpp"

namespace metaspace {
namespace {

LoaderMetaspace& impl(ms_loader_t* l) {
  return *LoaderMetaspace::object_of(reinterpret_cast<uintptr_t>(l));
}

ms_usage_t usage_of(ms_metaspace_t* ms) {
  ms_usage_t u{};
  u.size = sizeof u;
  EXPECT_EQ(ms_get_usage(ms, &u), MS_OK) << ms_last_error_text();
  return u;
}

// The identity, exactly, per space and in total.
::testing::AssertionResult identity_holds(const ms_stats_t& st) {
  const ms_space_stats_t* spaces[3] = {&st.space[0], &st.space[1], &st.total};
  for (const ms_space_stats_t* sp : spaces) {
    size_t sum = metaspace::test::accounted_bytes(*sp);
    if (sum != sp->committed_bytes || sp->free_in_chunks_bytes > sp->committed_bytes) {
      return ::testing::AssertionFailure()
             << "committed " << sp->committed_bytes << " != used " << sp->used_bytes
             << " + free in chunks " << sp->free_in_chunks_bytes << " + free chunks "
             << sp->free_chunks_bytes << " + free blocks " << sp->free_blocks_bytes
             << " + fences " << sp->fence_bytes << " + overhead " << sp->overhead_bytes;
    }
  }
  return ::testing::AssertionSuccess();
}

// After ms_get_stats (which brings every loader's counters up to date) the O(1) usage is
// exactly the snapshot's: reserved, committed, used and overhead, per space and in total.
::testing::AssertionResult usage_matches_stats(ms_metaspace_t* ms) {
  ms_stats_t st;
  if (ms_get_stats(ms, &st) != MS_OK) return ::testing::AssertionFailure() << ms_last_error_text();
  if (auto r = identity_holds(st); !r) return r;
  ms_usage_t u = usage_of(ms);
  const ms_space_usage_t* us[3] = {&u.space[0], &u.space[1], &u.total};
  const ms_space_stats_t* ss[3] = {&st.space[0], &st.space[1], &st.total};
  for (int i = 0; i < 3; i++) {
    if (us[i]->reserved_bytes != ss[i]->reserved_bytes ||
        us[i]->committed_bytes != ss[i]->committed_bytes ||
        us[i]->used_bytes != ss[i]->used_bytes ||
        us[i]->overhead_bytes != ss[i]->overhead_bytes) {
      return ::testing::AssertionFailure()
             << "space " << i << ": usage reserved/committed/used/overhead " << us[i]->reserved_bytes
             << "/" << us[i]->committed_bytes << "/" << us[i]->used_bytes << "/"
             << us[i]->overhead_bytes << ", stats " << ss[i]->reserved_bytes << "/"
             << ss[i]->committed_bytes << "/" << ss[i]->used_bytes << "/"
             << ss[i]->overhead_bytes;
    }
  }
  return ::testing::AssertionSuccess();
}

struct Config {
  const char* name;
  ms_reclaim_t reclaim;
  int checked;
  size_t class_alignment;
};

class UsageRandomTest : public ::testing::TestWithParam<Config> {};

// The accounting identity and usage == snapshot after every step of the random workload, and
// ms_verify (which also checks that the loaders add up to the counters) after every step.
TEST_P(UsageRandomTest, CountersMatchTheSnapshotAfterEveryStep) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = GetParam().reclaim;
  s.checked = GetParam().checked;
  s.class_alignment_bytes = GetParam().class_alignment;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  {
    test::RandomWorkload work(ms, 7);
    for (int i = 0; i < 400; i++) {
      work.step();
      ASSERT_EQ(ms_verify(ms), MS_OK) << "step " << i << ": " << ms_last_error_text();
      ASSERT_TRUE(usage_matches_stats(ms)) << "step " << i;
    }
  }
  ms_purge(ms);
  ms_usage_t u = usage_of(ms);
  EXPECT_EQ(u.total.used_bytes, 0u);
  ASSERT_TRUE(usage_matches_stats(ms));
  ms_destroy(ms);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, UsageRandomTest,
    ::testing::Values(Config{"balanced", MS_RECLAIM_BALANCED, 0, 8},
                      Config{"balanced_align1k", MS_RECLAIM_BALANCED, 0, 1024},
                      Config{"aggressive_checked", MS_RECLAIM_AGGRESSIVE, 1, 64},
                      Config{"none", MS_RECLAIM_NONE, 0, 256}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Usage, FastPathBumpsShowAfterTheNextSlowPathOrSnapshot) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);  // first: slow path, new chunk
  size_t after_slow = usage_of(ms).space[MS_SPACE_NONCLASS].used_bytes;
  EXPECT_EQ(after_slow, 64u);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);  // inline bump: no counter moves
  EXPECT_EQ(usage_of(ms).space[MS_SPACE_NONCLASS].used_bytes, 64u);
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.space[MS_SPACE_NONCLASS].used_bytes, 128u);
  EXPECT_EQ(usage_of(ms).space[MS_SPACE_NONCLASS].used_bytes, 128u);
  EXPECT_TRUE(usage_matches_stats(ms));
  ms_loader_destroy(l);
  EXPECT_EQ(usage_of(ms).total.used_bytes, 0u);
  ms_destroy(ms);
}

// The identity as the public header writes it ("committed = used + ... "), read from the header
// itself and evaluated against a metaspace's statistics, per space and in total: the header's
// promise is the one the numbers keep (it once left out the overhead, 16 688 of 20 480 bytes).
TEST(Usage, TheHeadersIdentityHoldsExactly) {
  std::ifstream header(METASPACE_SOURCE_DIR "/include/metaspace/metaspace.h");
  ASSERT_TRUE(header.good());
  std::string line, identity;
  while (std::getline(header, line)) {
    size_t at = line.find("committed = used");
    if (at != std::string::npos) identity = line.substr(at + std::strlen("committed = "));
  }
  ASSERT_FALSE(identity.empty()) << "the header states no identity";
  std::vector<std::string> terms;
  std::istringstream in(identity);
  for (std::string word; in >> word;) {
    if (word != "+") terms.push_back(word);
  }
  auto field = [](const ms_space_stats_t& sp, const std::string& name, bool* known) -> size_t {
    *known = true;
    if (name == "used") return sp.used_bytes;
    if (name == "free_in_chunks") return sp.free_in_chunks_bytes;
    if (name == "free_chunks") return sp.free_chunks_bytes;
    if (name == "free_blocks") return sp.free_blocks_bytes;
    if (name == "fence") return sp.fence_bytes;
    if (name == "overhead") return sp.overhead_bytes;
    *known = false;
    return 0;
  };
  for (int checked = 0; checked <= 1; checked++) {
    ms_settings_t s;
    ms_settings_init(&s);
    s.checked = checked;
    ms_metaspace_t* ms = ms_create(&s);
    ASSERT_NE(ms, nullptr) << ms_last_error_text();
    std::vector<ms_loader_t*> loaders;
    for (int i = 0; i < 50; i++) {
      ms_loader_t* l = ms_loader_create(ms, i % 3 == 0 ? MS_LOADER_MICRO : MS_LOADER_STANDARD, 0);
      ASSERT_NE(l, nullptr);
      for (int b = 0; b < 40; b++) {
        void* p = ms_allocate(l, b % 4 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS,
                              static_cast<size_t>(8 + (b * 37) % 700));
        ASSERT_NE(p, nullptr);
        if (b % 5 == 0) ASSERT_EQ(ms_deallocate(l, p, static_cast<size_t>(8 + (b * 37) % 700)), MS_OK);
      }
      loaders.push_back(l);
    }
    for (size_t i = 0; i < loaders.size(); i += 4) ASSERT_EQ(ms_loader_destroy(loaders[i]), MS_OK);
    ms_stats_t st;
    ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
    const ms_space_stats_t* spaces[3] = {&st.space[0], &st.space[1], &st.total};
    for (const ms_space_stats_t* sp : spaces) {
      size_t sum = 0;
      for (const std::string& t : terms) {
        bool known = false;
        sum += field(*sp, t, &known);
        EXPECT_TRUE(known) << "the header's identity names '" << t << "', no field";
      }
      EXPECT_EQ(sp->committed_bytes, sum) << "checked " << checked << ": " << identity
                                          << " (overhead " << sp->overhead_bytes << ")";
      EXPECT_GT(sp->overhead_bytes, 0u);
    }
    ms_destroy(ms);
  }
}

TEST(Usage, SizeFieldIsChecked) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_usage_t u{};
  u.size = 0;
  EXPECT_EQ(ms_get_usage(ms, &u), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_get_usage(ms, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_get_usage(nullptr, &u), MS_ERR_INVALID_ARGUMENT);
  // An older caller that knows only the non-class space: nothing beyond it is written.
  ms_usage_t partial;
  std::memset(&partial, 0xAB, sizeof partial);
  partial.size = sizeof(size_t) + sizeof(ms_space_usage_t);
  ASSERT_EQ(ms_get_usage(ms, &partial), MS_OK);
  EXPECT_EQ(partial.size, sizeof(size_t) + sizeof(ms_space_usage_t));
  EXPECT_EQ(partial.space[0].reserved_bytes, usage_of(ms).space[0].reserved_bytes);
  EXPECT_EQ(partial.space[1].reserved_bytes, static_cast<size_t>(0xABABABABABABABABull));
  // A newer caller's larger struct: the library fills what it knows and says how much.
  struct Bigger {
    ms_usage_t u;
    size_t extra;
  } big{};
  big.u.size = sizeof big;
  ASSERT_EQ(ms_get_usage(ms, &big.u), MS_OK);
  EXPECT_EQ(big.u.size, sizeof(ms_usage_t));
  EXPECT_GT(big.u.space[1].reserved_bytes, 0u);
  ms_destroy(ms);
}

// Another thread holds a loader's lock (a runtime in the middle of a slow path, say): totals and
// usage still complete, and a report, which must wait for that loader, holds no other loader's
// lock meanwhile. Before, the snapshot took every loader lock at once.
TEST(Usage, SnapshotHoldsAtMostOneLoaderLock) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_loader_t* a = ms_loader_create(ms, MS_LOADER_STANDARD, 0);  // visited last (newest first)
  ms_loader_t* b = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(a, MS_SPACE_NONCLASS, 100), nullptr);
  ASSERT_NE(ms_allocate(b, MS_SPACE_NONCLASS, 100), nullptr);
  std::unique_lock<LoaderLock> held(impl(a).lock());

  auto stats = std::async(std::launch::async, [&] {
    ms_stats_t st;
    return ms_get_stats(ms, &st) == MS_OK && identity_holds(st);
  });
  ASSERT_EQ(stats.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "ms_get_stats waits for a loader lock held elsewhere";
  EXPECT_TRUE(stats.get());
  EXPECT_EQ(usage_of(ms).total.used_bytes, 208u);

  FILE* sink = std::fopen("/dev/null", "w");
  ASSERT_NE(sink, nullptr);
  ms_report_options_t options;
  ms_report_options_init(&options);
  options.per_loader = 1;
  auto report = std::async(std::launch::async, [&] { return ms_print_report(ms, sink, &options); });
  // The report visits b, then blocks on a; b's lock must be free again by then.
  EXPECT_EQ(report.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  std::unique_lock<LoaderLock> other(impl(b).lock(), std::try_to_lock);
  EXPECT_TRUE(other.owns_lock()) << "the report holds a second loader lock";
  if (other.owns_lock()) other.unlock();
  held.unlock();
  EXPECT_EQ(report.get(), MS_OK);
  std::fclose(sink);
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace
