// The JSON report's numbers add up after random load/unload workloads, under every reclaim
// policy, with small and large class alignment, in normal and checked mode: per space and in
// total, used + the waste components = committed; the total is the sum of the spaces; the
// per-loader and per-kind tables add up to the totals; and it agrees with ms_get_stats.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>

#include "support/policy_settings.hpp"
#include "unit/stats/random_workload.hpp"

namespace metaspace::test {
namespace {

using nlohmann::json;

json report_json(ms_metaspace_t* ms, const ms_report_options_t* options) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(ms_write_report_json(ms, f, options), MS_OK) << ms_last_error_text();
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  return json::parse(text);
}

const char* const kSpaceFields[] = {
    "reserved_bytes",    "committed_bytes",   "used_bytes",          "free_bytes",
    "waste_bytes",       "free_in_chunks_bytes", "free_chunks_bytes", "free_blocks_bytes",
    "free_blocks_count", "deallocated_bytes", "salvaged_bytes",      "alignment_gap_bytes",
    "fence_bytes",       "overhead_bytes",    "nodes",               "root_chunks",
    "chunks_in_use",     "free_chunks"};

uint64_t u(const json& j, const char* key) { return j.at(key).get<uint64_t>(); }

// A loader's or kind's allocation count: a number when counted, null (read as 0) when not.
uint64_t allocations(const json& j, bool counted) {
  if (!counted) {
    EXPECT_TRUE(j.at("allocations").is_null()) << j.at("allocations");
    return 0;
  }
  return u(j, "allocations");
}

void check_space(const json& s, const std::string& name) {
  SCOPED_TRACE(name);
  EXPECT_EQ(u(s, "used_bytes") + u(s, "free_in_chunks_bytes") + u(s, "free_chunks_bytes") +
                u(s, "deallocated_bytes") + u(s, "salvaged_bytes") +
                u(s, "alignment_gap_bytes") + u(s, "fence_bytes") + u(s, "overhead_bytes"),
            u(s, "committed_bytes"));
  EXPECT_EQ(u(s, "free_blocks_bytes"),
            u(s, "deallocated_bytes") + u(s, "salvaged_bytes") + u(s, "alignment_gap_bytes"));
  EXPECT_EQ(u(s, "free_bytes"), u(s, "free_in_chunks_bytes") + u(s, "free_chunks_bytes"));
  EXPECT_EQ(u(s, "waste_bytes"), u(s, "free_blocks_bytes") + u(s, "fence_bytes"));
  EXPECT_EQ(u(s, "used_bytes") + u(s, "free_bytes") + u(s, "waste_bytes") +
                u(s, "overhead_bytes"),
            u(s, "committed_bytes"));
  // Nothing may have wrapped around: every part is at most the whole.
  EXPECT_LE(u(s, "used_bytes"), u(s, "committed_bytes"));
  EXPECT_LE(u(s, "waste_bytes"), u(s, "committed_bytes"));
  // Bookkeeping lies in its own reservation, not in reserved_bytes.
  EXPECT_LE(u(s, "committed_bytes") - u(s, "overhead_bytes"), u(s, "reserved_bytes"));
  uint64_t count = 0, committed = 0;
  for (const json& level : s.at("free_chunks_by_level")) {
    count += u(level, "count");
    committed += u(level, "committed_bytes");
    EXPECT_LE(u(level, "committed_bytes"), u(level, "bytes"));
    EXPECT_EQ(u(level, "bytes"), u(level, "count") * u(level, "chunk_bytes"));
  }
  EXPECT_EQ(count, u(s, "free_chunks"));
  EXPECT_EQ(committed, u(s, "free_chunks_bytes"));
}

void check_report(const json& r, ms_metaspace_t* ms, const RandomWorkload& w) {
  ASSERT_EQ(r.at("schema"), "libmetaspace.report");
  ASSERT_EQ(r.at("schema_version"), 2);
  const bool counted = r.at("allocations_counted").get<bool>();
  const json& spaces = r.at("spaces");
  check_space(spaces.at("nonclass"), "nonclass");
  check_space(spaces.at("class"), "class");
  check_space(spaces.at("total"), "total");
  for (const char* f : kSpaceFields) {
    EXPECT_EQ(u(spaces.at("total"), f), u(spaces.at("nonclass"), f) + u(spaces.at("class"), f))
        << f;
  }

  // The same instant as ms_get_stats, since nothing ran in between.
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(u(spaces.at("total"), "committed_bytes"), st.total.committed_bytes);
  EXPECT_EQ(u(spaces.at("total"), "used_bytes"), st.total.used_bytes);
  EXPECT_EQ(u(spaces.at("class"), "alignment_gap_bytes"), st.space[1].alignment_gap_bytes);
  EXPECT_EQ(counted, st.allocations_counted != 0);

  // Where the overhead lies: the rows add up to each space's overhead; every chunk of both
  // spaces, free or in use, has its header among the objects of the non-class space's chunk
  // headers' row (the spaces share their slabs, and the non-class space counts them); the class
  // space's rows are its node ranges only; the loader objects' row holds at least the live
  // loaders (and only in the non-class space).
  const json& breakdown = r.at("overhead_breakdown");
  const uint64_t all_chunks = u(spaces.at("nonclass"), "chunks_in_use") +
                              u(spaces.at("nonclass"), "free_chunks") +
                              u(spaces.at("class"), "chunks_in_use") +
                              u(spaces.at("class"), "free_chunks");
  for (const char* key : {"nonclass", "class"}) {
    SCOPED_TRACE(key);
    uint64_t bytes = 0, headers = 0, loader_objects = 0;
    for (const json& row : breakdown.at(key)) {
      const std::string what = row.at("what");
      EXPECT_GT(u(row, "bytes"), 0u) << what;
      bytes += u(row, "bytes");
      if (what.find("chunk headers") != std::string::npos) headers += u(row, "objects");
      if (what == "loader objects") loader_objects += u(row, "objects");
      if (u(row, "pages") > 0) EXPECT_EQ(u(row, "bytes") % u(row, "pages"), 0u) << what;
    }
    const json& sp = spaces.at(key);
    EXPECT_EQ(bytes, u(sp, "overhead_bytes"));
    if (std::string(key) == "class") {
      EXPECT_EQ(headers, 0u);
      EXPECT_EQ(loader_objects, 0u);
      for (const json& row : breakdown.at(key)) {
        EXPECT_EQ(row.at("what"), "node ranges (commit masks, chunk starts, node map)");
      }
    } else {
      EXPECT_EQ(headers, all_chunks) << "every header belongs to a chunk (no spares)";
      EXPECT_GE(loader_objects, w.live().size());
    }
  }

  // Per loader: exactly the live loaders, with their kinds; their usage sums to the spaces'.
  std::vector<ms_loader_t*> live = w.live();
  std::vector<ms_loader_kind_t> kinds = w.kinds();
  const json& loaders = r.at("loaders");
  ASSERT_EQ(loaders.size(), live.size());
  EXPECT_EQ(u(r, "loader_count"), live.size());
  std::set<uint64_t> listed;
  uint64_t used[2] = {}, allocations = 0;
  const char* const keys[2] = {"nonclass", "class"};
  for (const json& l : loaders) {
    listed.insert(u(l, "handle"));
    allocations += test::allocations(l, counted);
    for (int s = 0; s < 2; s++) {
      const json& a = l.at(keys[s]);
      used[s] += u(a, "used_bytes");
      EXPECT_LE(u(a, "used_bytes"), u(a, "committed_bytes"));
      EXPECT_LE(u(a, "committed_bytes"), u(a, "capacity_bytes"));
      uint64_t chunks = 0, capacity = 0;
      for (const json& level : a.at("chunks_by_level")) {
        chunks += u(level, "count");
        capacity += u(level, "count") * u(level, "chunk_bytes");
      }
      EXPECT_EQ(chunks, u(a, "chunks"));
      EXPECT_EQ(capacity + u(a, "pooled_bytes"), u(a, "capacity_bytes"));
    }
  }
  uint64_t loader_allocations = 0;
  for (size_t i = 0; i < live.size(); i++) {
    EXPECT_EQ(listed.count(reinterpret_cast<uintptr_t>(live[i])), 1u);
    ms_loader_stats_t ls;
    ASSERT_EQ(ms_loader_get_stats(live[i], &ls), MS_OK);
    EXPECT_EQ(ls.kind, kinds[i]);
    EXPECT_EQ(ls.allocations_counted, st.allocations_counted);
    loader_allocations += ls.allocations;
  }
  EXPECT_EQ(loader_allocations, allocations);
  EXPECT_EQ(used[0], u(spaces.at("nonclass"), "used_bytes"));
  EXPECT_EQ(used[1], u(spaces.at("class"), "used_bytes"));

  // Per kind: the loaders of each kind, summed.
  uint64_t kind_loaders = 0, kind_allocations = 0, kind_used[2] = {};
  for (const json& k : r.at("kinds")) {
    kind_loaders += u(k, "loaders");
    kind_allocations += test::allocations(k, counted);
    EXPECT_EQ(u(k, "loaders"), u(r.at("loaders_by_kind"), k.at("kind").get<std::string>().c_str()));
    for (int s = 0; s < 2; s++) kind_used[s] += u(k.at(keys[s]), "used_bytes");
  }
  EXPECT_EQ(kind_loaders, live.size());
  EXPECT_EQ(kind_allocations, allocations);
  EXPECT_EQ(kind_used[0], used[0]);
  EXPECT_EQ(kind_used[1], used[1]);
}

using Param = std::tuple<ms_reclaim_t, size_t, bool>;

class ReportAddsUp : public ::testing::TestWithParam<Param> {};

TEST_P(ReportAddsUp, AfterRandomWorkload) {
  auto [reclaim, alignment, checked] = GetParam();
  ms_settings_t s = test::policy_settings(reclaim, alignment, checked);
  s.class_space_bytes = 256 << 20;
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.allocations_counted, checked ? 1 : 0) << "checked mode counts; default not";
  ms_report_options_t options{0, 0, 1, 1, 1};
  {
    RandomWorkload w(ms, 1000 + static_cast<unsigned>(reclaim) * 10 + (alignment > 8) * 2 + checked);
    for (int round = 0; round < 8; round++) {
      for (int i = 0; i < 40; i++) w.step_checked();
      ASSERT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
      check_report(report_json(ms, &options), ms, w);
      if (HasFailure()) break;
    }
  }
  // Every loader gone and purged: nothing used, nothing wasted.
  ms_purge(ms);
  json r = report_json(ms, &options);
  const json& total = r.at("spaces").at("total");
  EXPECT_EQ(u(total, "used_bytes"), 0u);
  EXPECT_EQ(u(total, "waste_bytes"), 0u);
  EXPECT_EQ(u(total, "free_in_chunks_bytes"), 0u);
  // What stays committed is bookkeeping: the last 1 024 dead handles (8 KiB at most) and a few
  // spare chunk headers; the dead loaders' objects and the empty slab pages went back.
  if (reclaim != MS_RECLAIM_NONE) {
    EXPECT_EQ(u(total, "committed_bytes"), u(total, "overhead_bytes"));
    EXPECT_LE(u(total, "overhead_bytes"), 8u * 1024 + 64 * 4096);
  }
  EXPECT_TRUE(r.at("loaders").empty());
  ms_destroy(ms);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  static const char* const names[] = {"None", "Balanced", "Aggressive"};
  return std::string(names[std::get<0>(info.param)]) + "Align" +
         std::to_string(std::get<1>(info.param)) + (std::get<2>(info.param) ? "Checked" : "");
}

INSTANTIATE_TEST_SUITE_P(Policies, ReportAddsUp,
                         ::testing::Combine(::testing::Values(MS_RECLAIM_NONE,
                                                              MS_RECLAIM_BALANCED,
                                                              MS_RECLAIM_AGGRESSIVE),
                                            ::testing::Values(size_t{8}, size_t{1024}),
                                            ::testing::Bool()),
                         param_name);

TEST(ReportJson, OptionsLeaveOutTables) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  ms_report_options_t bare{0, 0, 0, 0, 0};
  json r = report_json(ms, &bare);
  EXPECT_FALSE(r.contains("loaders"));
  EXPECT_FALSE(r.contains("kinds"));
  EXPECT_FALSE(r.at("spaces").at("total").contains("free_chunks_by_level"));
  json d = report_json(ms, nullptr);  // defaults: kinds and levels, no loaders
  EXPECT_FALSE(d.contains("loaders"));
  EXPECT_EQ(d.at("kinds").size(), 3u);
  EXPECT_EQ(d.at("spaces").at("class").at("free_chunks_by_level").size(),
            d.at("settings").at("chunk_levels").get<size_t>());
  const json& set = d.at("settings");
  EXPECT_EQ(set.at("reclaim"), "balanced");
  EXPECT_EQ(u(set, "class_space_base"), ms_class_space_base(ms));
  EXPECT_EQ(u(set, "class_shift"), ms_class_shift(ms));
  EXPECT_EQ(u(set, "narrow_class_bits"), ms_narrow_class_bits(ms));
  EXPECT_EQ(set.at("checked"), false);
  EXPECT_EQ(set.at("count_allocations"), false);
  EXPECT_EQ(d.at("allocations_counted"), false);
  for (const json& k : d.at("kinds")) EXPECT_TRUE(k.at("allocations").is_null());
  ms_destroy(ms);
}

}  // namespace
}  // namespace metaspace::test
