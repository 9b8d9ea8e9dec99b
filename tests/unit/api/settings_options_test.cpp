// METASPACE_OPTIONS / ms_settings_parse: every key is understood, an unknown key or a bad value
// is refused with a sentence naming it, and a refused string changes nothing.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

ms_settings_t defaults() {
  ms_settings_t s;
  ms_settings_init(&s);
  return s;
}

TEST(SettingsOptions, EveryKeyIsApplied) {
  ms_settings_t s = defaults();
  ASSERT_EQ(ms_settings_parse(&s, "granule=16k, reclaim=aggressive,checked=1,report_at_exit=json,"
                                  "verbose=1,root_chunk=8m,node=64M,class_space=1g,"
                                  "class_alignment=64,max_committed=256m,gc_threshold=0x1000000,"
                                  "class_base=0x800000000"),
            MS_OK)
      << ms_last_error_text();
  EXPECT_EQ(s.commit_granule_bytes, 16u << 10);
  EXPECT_EQ(s.reclaim, MS_RECLAIM_AGGRESSIVE);
  EXPECT_EQ(s.checked, 1);
  EXPECT_EQ(s.report_at_exit, MS_REPORT_JSON);
  EXPECT_EQ(s.verbose, 1);
  EXPECT_EQ(s.root_chunk_bytes, 8u << 20);
  EXPECT_EQ(s.node_bytes, 64u << 20);
  EXPECT_EQ(s.class_space_bytes, 1u << 30);
  EXPECT_EQ(s.class_alignment_bytes, 64u);
  EXPECT_EQ(s.max_committed_bytes, 256u << 20);
  EXPECT_EQ(s.gc_threshold_bytes, 16u << 20);
  EXPECT_EQ(s.class_space_base, uintptr_t{0x800000000});
  EXPECT_EQ(s.size, sizeof(ms_settings_t));
}

TEST(SettingsOptions, EmptyAndNullChangeNothing) {
  ms_settings_t s = defaults();
  ms_settings_t d = defaults();
  EXPECT_EQ(ms_settings_parse(&s, nullptr), MS_OK);
  EXPECT_EQ(ms_settings_parse(&s, ""), MS_OK);
  EXPECT_EQ(ms_settings_parse(&s, " , ,"), MS_OK);
  EXPECT_EQ(std::memcmp(&s, &d, sizeof s), 0);
}

TEST(SettingsOptions, UnknownKeyIsNamedAndNothingChanges) {
  ms_settings_t s = defaults();
  ms_settings_t d = defaults();
  EXPECT_EQ(ms_settings_parse(&s, "granule=16k,granularity=16k"), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ms_last_error_text(), "unknown key 'granularity'"), nullptr)
      << ms_last_error_text();
  EXPECT_NE(std::strstr(ms_last_error_text(), "METASPACE_OPTIONS"), nullptr);
  EXPECT_EQ(std::memcmp(&s, &d, sizeof s), 0) << "the granule=16k before the bad key was applied";
}

TEST(SettingsOptions, BadValuesAreNamed) {
  const char* bad[] = {"granule=16q", "granule=", "granule=-4k", "reclaim=sometimes",
                       "checked=2", "verbose=maybe", "report_at_exit=xml", "granule",
                       "max_committed=99999999999999999999", "node=17179869184g"};
  for (const char* text : bad) {
    ms_settings_t s = defaults();
    EXPECT_EQ(ms_settings_parse(&s, text), MS_ERR_INVALID_ARGUMENT) << text;
    std::string key(text, std::strcspn(text, "="));
    EXPECT_NE(std::strstr(ms_last_error_text(), key.c_str()), nullptr)
        << text << ": " << ms_last_error_text();
  }
}

// One strict number syntax for every size and address key: decimal (leading zeros refused:
// strtoull read them as octal, "010k" as 8 KiB), or 0x and hex digits without a suffix; no sign,
// no whitespace inside the value (a newline slipped past a check for '-' and gave SIZE_MAX).
TEST(SettingsOptions, NumbersAreDecimalOrHexWithoutSignsSpacesOrLeadingZeros) {
  const char* keys[] = {"granule", "root_chunk", "node", "class_space", "class_base",
                        "class_alignment", "max_committed", "gc_threshold"};
  const char* values[] = {"010k", "0100m", "00", "\n-1", "\n1", "-1", "+1", " -1", "1 k", "1\tk",
                          "\v1", "1\n", "0x", "0x10k", "0xg", "1e3", "1.5k", "k", "0k1",
                          "18446744073709551616", "0x10000000000000000", "1kk", "1kbb"};
  for (const char* key : keys) {
    for (const char* v : values) {
      std::string text = std::string(key) + "=" + v;
      ms_settings_t s = defaults();
      ms_settings_t d = s;
      EXPECT_EQ(ms_settings_parse(&s, text.c_str()), MS_ERR_INVALID_ARGUMENT) << text;
      EXPECT_NE(std::strstr(ms_last_error_text(), key), nullptr) << text << ": "
                                                               << ms_last_error_text();
      EXPECT_EQ(std::memcmp(&s, &d, sizeof s), 0) << text;
    }
  }
  struct Good {
    const char* text;
    size_t bytes;
  } good[] = {{"granule=0", 0}, {"granule=10k", 10240}, {"granule=100m", 100u << 20},
              {"granule=0x10", 16}, {"granule=0X1f", 31}, {"granule=2g", size_t{2} << 30},
              {"granule=16kb", 16384}, {"granule=16KB", 16384}, {"granule = 8k ", 8192},
              {"granule=18446744073709551615", ~size_t{0}}};
  for (const Good& g : good) {
    ms_settings_t s = defaults();
    ASSERT_EQ(ms_settings_parse(&s, g.text), MS_OK) << g.text << ": " << ms_last_error_text();
    EXPECT_EQ(s.commit_granule_bytes, g.bytes) << g.text;
  }
}

// count_allocations (appended to ms_settings_t): 0 by default, the key sets it, a bad value is
// refused and changes nothing, ms_create checks the range, and a caller whose struct ends before
// the field cannot set it from text.
TEST(SettingsOptions, CountAllocationsKey) {
  ms_settings_t s = defaults();
  EXPECT_EQ(s.count_allocations, 0);
  ASSERT_EQ(ms_settings_parse(&s, "count_allocations=1"), MS_OK) << ms_last_error_text();
  EXPECT_EQ(s.count_allocations, 1);
  ASSERT_EQ(ms_settings_parse(&s, "count_allocations=0"), MS_OK);
  EXPECT_EQ(s.count_allocations, 0);
  for (const char* bad : {"count_allocations=2", "count_allocations=maybe", "count_allocations=",
                          "granule=16k,count_allocations=-1"}) {
    ms_settings_t t = defaults();
    ms_settings_t d = defaults();
    EXPECT_EQ(ms_settings_parse(&t, bad), MS_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::strstr(ms_last_error_text(), "count_allocations"), nullptr)
        << bad << ": " << ms_last_error_text();
    EXPECT_EQ(std::memcmp(&t, &d, sizeof t), 0) << bad << ": settings changed";
  }
  s = defaults();
  s.count_allocations = 2;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_NE(std::strstr(ms_last_error_text(), "count_allocations"), nullptr);
  // A caller built before the field: its struct ends at archive_relocation.
  ms_settings_t old;
  ASSERT_EQ(ms_settings_init_sized(&old, offsetof(ms_settings_t, count_allocations)), MS_OK);
  ms_settings_t before = old;
  EXPECT_EQ(ms_settings_parse(&old, "count_allocations=1"), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::memcmp(&old, &before, offsetof(ms_settings_t, count_allocations)), 0);
  EXPECT_EQ(ms_settings_parse(&old, "count_allocations=0"), MS_OK) << "the default needs no field";
}

TEST(SettingsOptions, FromEnvironmentAtCreate) {
  ASSERT_EQ(setenv("METASPACE_OPTIONS", "granule=16k,reclaim=aggressive", 1), 0);
  ms_settings_t s = defaults();
  ASSERT_EQ(ms_settings_from_env(&s), MS_OK) << ms_last_error_text();
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms, &st), MS_OK);
  EXPECT_EQ(st.commit_granule_bytes, 16u << 10);
  ms_destroy(ms);

  ASSERT_EQ(setenv("METASPACE_OPTIONS", "bogus=1", 1), 0);
  s = defaults();
  EXPECT_EQ(ms_settings_from_env(&s), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(ms_last_error_text(), "'bogus'"), nullptr);
  ASSERT_EQ(unsetenv("METASPACE_OPTIONS"), 0);
  EXPECT_EQ(ms_settings_from_env(&s), MS_OK);
}

TEST(SettingsOptions, RangesAreCheckedByCreate) {
  ms_settings_t s = defaults();
  ASSERT_EQ(ms_settings_parse(&s, "granule=3k"), MS_OK);  // well-formed, out of range
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_EQ(ms_last_error(), MS_ERR_INVALID_ARGUMENT);
  s = defaults();
  s.report_at_exit = 3;
  EXPECT_EQ(ms_create(&s), nullptr);
  EXPECT_NE(std::strstr(ms_last_error_text(), "report_at_exit"), nullptr);
}

TEST(SettingsOptions, ReportAtExitGoesToStderrAtDestroy) {
  ms_settings_t s = defaults();
  ASSERT_EQ(ms_settings_parse(&s, "report_at_exit=json,verbose=1"), MS_OK);
  ms_metaspace_t* ms = ms_create(&s);
  ASSERT_NE(ms, nullptr);
  testing::internal::CaptureStderr();
  ms_destroy(ms);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("\"schema\""), std::string::npos) << err;
  EXPECT_NE(err.find("destroyed"), std::string::npos) << err;
}

// The verbose line at ms_create names the settings as METASPACE_OPTIONS does: reclaim and
// report_at_exit by name, sizes with their suffix, 0 by what it means.
TEST(SettingsOptions, VerboseLineAtCreateNamesTheSettings) {
  ms_settings_t s = defaults();
  ASSERT_EQ(ms_settings_parse(&s, "verbose=1,report_at_exit=json,reclaim=aggressive,"
                                  "max_committed=256m,class_alignment=64"),
            MS_OK);
  testing::internal::CaptureStderr();
  ms_metaspace_t* ms = ms_create(&s);
  std::string line = testing::internal::GetCapturedStderr();
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  for (const char* part : {"reclaim=aggressive ", "granule=default ", "root_chunk=4m ", "node=64m ",
                           "class_space=1g ", "class_alignment=64 ", "max_committed=256m ",
                           "gc_threshold=none ", "checked=0 ", "count_allocations=0 ",
                           "report_at_exit=json\n"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " not in: " << line;
  }
  testing::internal::CaptureStderr();
  ms_destroy(ms);
  testing::internal::GetCapturedStderr();

  s = defaults();
  ASSERT_EQ(ms_settings_parse(&s, "verbose=1,granule=16k,gc_threshold=3000"), MS_OK);
  testing::internal::CaptureStderr();
  ms = ms_create(&s);
  line = testing::internal::GetCapturedStderr();
  ASSERT_NE(ms, nullptr) << ms_last_error_text();
  for (const char* part : {"reclaim=balanced ", "granule=16k ", "max_committed=unlimited ",
                           "gc_threshold=3000 ", "report_at_exit=none\n"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " not in: " << line;
  }
  testing::internal::CaptureStderr();
  ms_destroy(ms);
  testing::internal::GetCapturedStderr();
}

}  // namespace
