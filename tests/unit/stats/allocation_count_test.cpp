// Allocation counts (ms_loader_stats_t.allocations, the reports' allocation columns) are kept only
// with ms_settings_t.count_allocations or checked mode: the inline fast path does not count, so
// counting closes it and every block goes through the library, which counts it exactly — new
// blocks, exact-size reuse, class reuse, shared loaders' windows, micro loaders' pooled blocks.
// Without counting the inline path stays open and the statistics say "not counted".
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;

ms_metaspace_t* create(int count_allocations, int checked = 0) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.count_allocations = count_allocations;
  s.checked = checked;
  ms_metaspace_t* ms = ms_create(&s);
  EXPECT_NE(ms, nullptr) << ms_last_error_text();
  return ms;
}

const ms__loader_head& head(ms_loader_t* l) { return *ms__head_of(l); }

ms_loader_stats_t loader_stats(ms_loader_t* l) {
  ms_loader_stats_t ls{};
  EXPECT_EQ(ms_loader_get_stats(l, &ls), MS_OK) << ms_last_error_text();
  return ls;
}

std::string report(ms_metaspace_t* ms, bool as_json) {
  ms_report_options_t o;
  ms_report_options_init(&o);
  o.per_loader = 1;
  std::string text;
  auto append = [](void* user, const char* t, size_t n) { static_cast<std::string*>(user)->append(t, n); };
  EXPECT_EQ(as_json ? ms_write_report_json_cb(ms, append, &text, &o)
                    : ms_print_report_cb(ms, append, &text, &o),
            MS_OK);
  return text;
}

TEST(AllocationCount, NotCountedByDefaultAndTheInlinePathServes) {
  ms_metaspace_t* ms = create(0);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(l, nullptr);
  std::vector<void*> blocks;
  for (int i = 0; i < 200; i++) blocks.push_back(ms_allocate(l, MS_SPACE_NONCLASS, 8 + 8 * (i % 16)));
  for (void* p : blocks) ASSERT_NE(p, nullptr);
  EXPECT_NE(head(l).bump[MS_SPACE_NONCLASS].top, nullptr) << "the inline window is open";
  // Freed and reused inline (the bins are published).
  ASSERT_EQ(ms_deallocate(l, blocks[10], 8 + 8 * 10), MS_OK);
  EXPECT_NE(head(l).bins, nullptr);
  EXPECT_EQ(ms_allocate(l, MS_SPACE_NONCLASS, 8 + 8 * 10), blocks[10]);
  EXPECT_EQ(head(l).bump[MS_SPACE_NONCLASS].spare, 0u) << "the inline path counts nothing";

  ms_loader_stats_t ls = loader_stats(l);
  EXPECT_EQ(ls.allocations_counted, 0);
  EXPECT_EQ(ls.allocations, 0u) << "no partial count from the slow path";
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.allocations_counted, 0);

  std::string text = report(ms, false);
  EXPECT_NE(text.find("allocations not counted"), std::string::npos) << text;
  EXPECT_NE(text.find("allocations counted:   no"), std::string::npos) << text;
  // The per-kind row (kind, loaders, allocations) and the per-loader row show "-".
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n  standard +1 +- \|)"))) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n  0x[0-9a-f]+ +standard +- \|)"))) << text;
  json j = json::parse(report(ms, true));
  EXPECT_EQ(j.at("allocations_counted"), false);
  for (const json& k : j.at("kinds")) EXPECT_TRUE(k.at("allocations").is_null());
  ASSERT_EQ(j.at("loaders").size(), 1u);
  EXPECT_TRUE(j.at("loaders")[0].at("allocations").is_null());
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

// One loader of each sort, every block counted once whichever path served it.
TEST(AllocationCount, CountedExactlyOnEveryPath) {
  ms_metaspace_t* ms = create(1);
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.allocations_counted, 1);

  // A standard loader: fast-path-sized requests of both spaces (past the micro pool's Klasses
  // into its own class chunk), exact-size reuse of non-class and class blocks, a large request.
  ms_loader_t* standard = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(standard, nullptr);
  uint64_t standard_count = 0;
  std::vector<std::pair<void*, size_t>> nonclass, klasses;
  for (int i = 0; i < 3000; i++) {
    size_t n = 8 + 8 * (i % 40);
    void* p = ms_allocate(standard, MS_SPACE_NONCLASS, n);
    ASSERT_NE(p, nullptr);
    nonclass.push_back({p, n});
    standard_count++;
    if (i % 100 == 0) {
      void* k = ms_allocate(standard, MS_SPACE_CLASS, 600);
      ASSERT_NE(k, nullptr);
      klasses.push_back({k, 600});
      standard_count++;
    }
  }
  EXPECT_EQ(head(standard).bump[MS_SPACE_NONCLASS].top, nullptr) << "counting closes the window";
  EXPECT_EQ(head(standard).bump[MS_SPACE_CLASS].top, nullptr);
  for (size_t i = 0; i < nonclass.size(); i += 3) {
    ASSERT_EQ(ms_deallocate(standard, nonclass[i].first, nonclass[i].second), MS_OK);
  }
  for (size_t i = 0; i < klasses.size(); i += 2) {
    ASSERT_EQ(ms_deallocate(standard, klasses[i].first, klasses[i].second), MS_OK);
  }
  EXPECT_EQ(head(standard).bins, nullptr) << "no inline reuse while counting";
  for (size_t i = 0; i < nonclass.size(); i += 3) {
    ASSERT_NE(ms_allocate(standard, MS_SPACE_NONCLASS, nonclass[i].second), nullptr);
    standard_count++;
  }
  for (size_t i = 0; i < klasses.size(); i += 2) {
    ASSERT_NE(ms_allocate(standard, MS_SPACE_CLASS, 600), nullptr);
    standard_count++;
  }
  ASSERT_NE(ms_allocate(standard, MS_SPACE_NONCLASS, 100 * 1024), nullptr);
  standard_count++;
  // An executable built against the older header writes the old counter field: ignored.
  const_cast<ms__loader_head&>(head(standard)).bump[MS_SPACE_NONCLASS].spare = 12345;
  ms_loader_stats_t ls = loader_stats(standard);
  EXPECT_EQ(ls.allocations_counted, 1);
  EXPECT_EQ(ls.allocations, standard_count);
  EXPECT_GT(ls.chunks[MS_SPACE_CLASS], 0u) << "the class arena served some Klasses";

  // Micro loaders: pooled blocks, and one that outgrows the pool and graduates to arenas.
  ms_loader_t* micro = ms_loader_create(ms, MS_LOADER_MICRO, 0);
  ms_loader_t* graduate = ms_loader_create(ms, MS_LOADER_MICRO, 0);
  ASSERT_NE(micro, nullptr);
  ASSERT_NE(graduate, nullptr);
  for (int i = 0; i < 20; i++) ASSERT_NE(ms_allocate(micro, static_cast<ms_space_t>(i % 2), 48), nullptr);
  for (int i = 0; i < 500; i++) ASSERT_NE(ms_allocate(graduate, MS_SPACE_NONCLASS, 200), nullptr);
  ls = loader_stats(micro);
  EXPECT_EQ(ls.allocations, 20u);
  EXPECT_EQ(ls.chunks[0] + ls.chunks[1], 0u) << "all pooled";
  ls = loader_stats(graduate);
  EXPECT_EQ(ls.allocations, 500u);
  EXPECT_GT(ls.chunks[MS_SPACE_NONCLASS], 0u) << "graduated";

  // A shared loader used by two threads at once: window bumps, new windows and locked requests.
  ms_loader_t* shared = ms_loader_create(ms, MS_LOADER_STANDARD, MS_LOADER_SHARED);
  ASSERT_NE(shared, nullptr);
  constexpr int kPerThread = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([shared, t] {
      for (int i = 0; i < kPerThread; i++) {
        size_t n = i % 50 == 0 ? 3000 : 8 + 8 * ((i + t) % 30);
        ms_space_t space = i % 40 == 0 ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
        if (ms_allocate(shared, space, n) == nullptr) return;
      }
    });
  }
  for (auto& th : threads) th.join();
  ls = loader_stats(shared);
  EXPECT_EQ(ls.allocations, 2u * kPerThread);

  // The reports: counts per loader and per kind, summed as the loaders' statistics.
  json j = json::parse(report(ms, true));
  EXPECT_EQ(j.at("allocations_counted"), true);
  EXPECT_EQ(j.at("settings").at("count_allocations"), true);
  uint64_t by_kind = 0, by_loader = 0;
  for (const json& k : j.at("kinds")) by_kind += k.at("allocations").get<uint64_t>();
  for (const json& l : j.at("loaders")) by_loader += l.at("allocations").get<uint64_t>();
  uint64_t total = standard_count + 20 + 500 + 2u * kPerThread;
  EXPECT_EQ(by_kind, total);
  EXPECT_EQ(by_loader, total);
  std::string text = report(ms, false);
  EXPECT_NE(text.find(std::to_string(total) + " allocations:"), std::string::npos) << text;
  EXPECT_NE(text.find("allocations counted:   yes"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(\n  micro +2 +520 \|)"))) << text;
  EXPECT_EQ(ms_verify(ms), MS_OK) << ms_last_error_text();
  ms_destroy(ms);
}

TEST(AllocationCount, CheckedModeAlwaysCounts) {
  ms_metaspace_t* ms = create(0, /*checked=*/1);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ms_loader_t* micro = ms_loader_create(ms, MS_LOADER_MICRO, 0);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(micro, nullptr);
  for (int i = 0; i < 100; i++) ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 24), nullptr);
  for (int i = 0; i < 7; i++) ASSERT_NE(ms_allocate(micro, MS_SPACE_CLASS, 600), nullptr);
  EXPECT_EQ(loader_stats(l).allocations_counted, 1);
  EXPECT_EQ(loader_stats(l).allocations, 100u);
  EXPECT_EQ(loader_stats(micro).allocations, 7u);
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.allocations_counted, 1);
  ms_destroy(ms);
}

// A caller built before allocations_counted was appended (the 0.2 layouts) still gets its
// fields, and no more bytes than its struct has.
TEST(AllocationCount, OlderStructsGetTheirBytesOnly) {
  ms_metaspace_t* ms = create(1);
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  ASSERT_NE(ms_allocate(l, MS_SPACE_NONCLASS, 64), nullptr);
  std::vector<unsigned char> buffer(sizeof(ms_loader_stats_t), 0xAB);
  auto* ls = reinterpret_cast<ms_loader_stats_t*>(buffer.data());
  size_t old_size = offsetof(ms_loader_stats_t, allocations_counted);
  ASSERT_EQ(ms_loader_get_stats_sized(l, ls, old_size), MS_OK) << ms_last_error_text();
  EXPECT_EQ(ls->allocations, 1u);
  for (size_t i = old_size; i < buffer.size(); i++) ASSERT_EQ(buffer[i], 0xAB) << i;
  ms_destroy(ms);
}

}  // namespace
