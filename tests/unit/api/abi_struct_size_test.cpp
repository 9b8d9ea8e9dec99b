// The size rule of docs/abi.md, from the caller's side: a caller built against an older header
// (a shorter struct) gets only its bytes written, a size from a newer header is refused, a
// zero-initialized input struct is read as the 0.2 layout, and the exported functions behind the
// header's macros work for FFI callers.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include "api/struct_size.hpp"

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace {

class AbiStructSize : public ::testing::Test {
 protected:
  void SetUp() override {
    ms_ = ms_create(nullptr);
    ASSERT_NE(ms_, nullptr);
    l_ = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l_, nullptr);
    ASSERT_NE(ms_allocate(l_, MS_SPACE_NONCLASS, 100), nullptr);
  }
  void TearDown() override { ms_destroy(ms_); }
  ms_metaspace_t* ms_ = nullptr;
  ms_loader_t* l_ = nullptr;
};

TEST_F(AbiStructSize, StatsWriteExactlyTheCallersBytes) {
  ms_stats_t full;
  ASSERT_EQ(ms_get_stats(ms_, &full), MS_OK);
  // The caller's buffer is larger than its struct: nothing past the size it passed is written.
  std::vector<unsigned char> buffer(sizeof(ms_stats_t) + 64, 0xAB);
  auto* out = reinterpret_cast<ms_stats_t*>(buffer.data());
  ASSERT_EQ(ms_get_stats_sized(ms_, out, sizeof(ms_stats_t)), MS_OK) << ms_last_error_text();
  for (size_t i = sizeof(ms_stats_t); i < buffer.size(); i++) ASSERT_EQ(buffer[i], 0xAB) << i;
  EXPECT_EQ(out->total.committed_bytes, full.total.committed_bytes);
  EXPECT_EQ(out->loaders, 1u);
  // A size below the first sized layout (0.2) is no layout at all: refused, nothing written.
  std::fill(buffer.begin(), buffer.end(), 0xAB);
  EXPECT_EQ(ms_get_stats_sized(ms_, out, offsetof(ms_stats_t, commits)), MS_ERR_INVALID_ARGUMENT);
  for (unsigned char b : buffer) ASSERT_EQ(b, 0xAB);
  ms_loader_stats_t ls;
  EXPECT_EQ(ms_loader_get_stats_sized(l_, &ls, 8), MS_ERR_INVALID_ARGUMENT);
}

TEST_F(AbiStructSize, SizeFromANewerHeaderIsRefused) {
  std::vector<unsigned char> buffer(sizeof(ms_stats_t) + 64);
  EXPECT_EQ(ms_get_stats_sized(ms_, reinterpret_cast<ms_stats_t*>(buffer.data()),
                               sizeof(ms_stats_t) + 8),
            MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ms_last_error_text(), "newer header"), nullptr) << ms_last_error_text();
  ms_settings_t s;
  ms_settings_init(&s);
  s.size = sizeof s + 8;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
}

TEST_F(AbiStructSize, ExportedFunctionsBehindTheMacros) {
  ms_stats_t a, b;
  ASSERT_EQ(ms_get_stats(ms_, &a), MS_OK);
  ASSERT_EQ((ms_get_stats)(ms_, &b), MS_OK);  // the function, as an FFI caller calls it
  // The function writes the 0.2 layout only (fields appended since, e.g. the archive, are not).
  EXPECT_EQ(std::memcmp(&a, &b, metaspace::api::kStatsBytesV0_2), 0);
  ms_loader_stats_t la, lb;
  ASSERT_EQ(ms_loader_get_stats(l_, &la), MS_OK);
  ASSERT_EQ((ms_loader_get_stats)(l_, &lb), MS_OK);
  // Likewise for loader statistics (allocations_counted was appended).
  EXPECT_EQ(std::memcmp(&la, &lb, metaspace::api::kLoaderStatsBytesV0_2), 0);
  EXPECT_EQ(la.allocations_counted, 0) << "not counted by default";
  EXPECT_EQ(la.allocations, 0u);
  EXPECT_EQ(a.allocations_counted, 0);
  void* p = ms_alloc(l_, MS_SPACE_NONCLASS, 24);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ms_deallocate(l_, p, 24), MS_OK);
}

TEST(AbiSettings, InitSetsSizeAndZeroSizeIsTheFirstLayout) {
  ms_settings_t s;
  std::memset(&s, 0x5A, sizeof s);
  ms_settings_init(&s);
  EXPECT_EQ(s.size, sizeof(ms_settings_t));
  // A zero-initialized struct with the fields a caller cares about: accepted.
  ms_settings_t z{};
  z.reclaim = MS_RECLAIM_BALANCED;
  z.root_chunk_bytes = 4u << 20;
  z.node_bytes = 64u << 20;
  z.class_space_bytes = 1u << 30;
  z.class_alignment_bytes = 8;
  ms_metaspace_t* ms = ms_create(&z);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_destroy(ms);
  // A garbage size (init not called): refused, naming the init function.
  ms_settings_t g = s;
  g.size = 3;
  EXPECT_EQ(ms_create(&g), nullptr);
  EXPECT_NE(std::strstr(ms_last_error_text(), "_init"), nullptr) << ms_last_error_text();
}

TEST(AbiSettings, InitWritesOnlyTheCallersBytes) {
  std::vector<unsigned char> buffer(sizeof(ms_settings_t) + 32, 0xAB);
  auto* s = reinterpret_cast<ms_settings_t*>(buffer.data());
  ASSERT_EQ(ms_settings_init_sized(s, sizeof(ms_settings_t)), MS_OK);
  for (size_t i = sizeof(ms_settings_t); i < buffer.size(); i++) ASSERT_EQ(buffer[i], 0xAB) << i;
  EXPECT_EQ(s->size, sizeof(ms_settings_t));
  EXPECT_EQ(s->reclaim, MS_RECLAIM_BALANCED);
  // A size below the 0.2 layout: refused, nothing written.
  std::fill(buffer.begin(), buffer.end(), 0xAB);
  EXPECT_EQ(ms_settings_init_sized(s, offsetof(ms_settings_t, checked)), MS_ERR_INVALID_ARGUMENT);
  for (unsigned char b : buffer) ASSERT_EQ(b, 0xAB);
  EXPECT_EQ(ms_settings_init_sized(s, sizeof(ms_settings_t) + 8), MS_ERR_INVALID_ARGUMENT);
  // The plain exported function (FFI, 0.2 layout) and the macro agree.
  ms_settings_t a, b;
  ms_settings_init(&a);
  (ms_settings_init)(&b);
  EXPECT_EQ(b.size, metaspace::api::kSettingsBytesV0_2);
  EXPECT_EQ(std::memcmp(reinterpret_cast<char*>(&a) + sizeof a.size,
                        reinterpret_cast<char*>(&b) + sizeof b.size,
                        metaspace::api::kSettingsBytesV0_2 - sizeof a.size), 0);
  ms_report_options_t o;
  ASSERT_EQ(ms_report_options_init_sized(&o, sizeof o), MS_OK);
  EXPECT_EQ(o.size, sizeof o);
  EXPECT_EQ(ms_report_options_init_sized(&o, 4), MS_ERR_INVALID_ARGUMENT);
}

TEST(AbiSettings, VersionIsTheHeadersVersion) {
  std::string expected = std::to_string(MS_VERSION_MAJOR) + "." +
                         std::to_string(MS_VERSION_MINOR) + "." + std::to_string(MS_VERSION_PATCH);
  EXPECT_EQ(std::string(ms_version()), expected);
}

void append(void* user, const char* text, size_t n) { static_cast<std::string*>(user)->append(text, n); }

std::string through_file(ms_metaspace_t* ms, bool json, const ms_report_options_t* o) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  EXPECT_EQ(json ? ms_write_report_json(ms, f, o) : ms_print_report(ms, f, o), MS_OK);
  std::fclose(f);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

TEST_F(AbiStructSize, ReportCallbackGetsWhatTheStreamGets) {
  ms_report_options_t o;
  ms_report_options_init(&o);
  EXPECT_EQ(o.size, sizeof o);
  o.per_loader = 1;
  o.scale = 'K';
  for (bool json : {false, true}) {
    std::string cb;
    ms_error_t e = json ? ms_write_report_json_cb(ms_, append, &cb, &o)
                        : ms_print_report_cb(ms_, append, &cb, &o);
    ASSERT_EQ(e, MS_OK) << ms_last_error_text();
    std::string file = through_file(ms_, json, &o);
    // Loader lines carry no times: the two reports are identical.
    EXPECT_EQ(cb, file);
    EXPECT_GT(cb.size(), 1000u);
  }
  EXPECT_EQ(ms_print_report_cb(ms_, nullptr, nullptr, &o), MS_ERR_INVALID_ARGUMENT);
  ms_report_options_t bad = o;
  bad.scale = 'X';
  std::string cb;
  EXPECT_EQ(ms_print_report_cb(ms_, append, &cb, &bad), MS_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(cb.empty());
  ms_report_options_t zero{};  // size 0: the 0.2 layout, dynamic scale, nothing optional
  EXPECT_EQ(ms_print_report_cb(ms_, append, &cb, &zero), MS_OK) << ms_last_error_text();
}

}  // namespace
