// Fixtures of the API-level tests: a metaspace (normal or checked, by the test's parameter), and a
// metaspace with one standard loader. Tests add their checks to TearDown by overriding it and
// calling the base's.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

namespace metaspace::test {

// A metaspace; the test parameter is ms_settings_t.checked (0 or 1).
class MetaspaceByMode : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    ms_settings_t s;
    ms_settings_init(&s);
    s.checked = GetParam();
    ms_ = ms_create(&s);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
  }
  void TearDown() override { ms_destroy(ms_); }
  ms_metaspace_t* ms_ = nullptr;
};

// A metaspace with the default settings and one standard loader, destroyed (MS_OK expected)
// with the metaspace.
class OneStandardLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    ms_ = ms_create(nullptr);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
    l_ = ms_loader_create(ms_, MS_LOADER_STANDARD, 0);
    ASSERT_NE(l_, nullptr) << ms_last_error_text();
  }
  void TearDown() override {
    EXPECT_EQ(ms_loader_destroy(l_), MS_OK);
    ms_destroy(ms_);
  }
  ms_metaspace_t* ms_ = nullptr;
  ms_loader_t* l_ = nullptr;
};

}  // namespace metaspace::test
