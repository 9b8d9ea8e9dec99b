// The text report: every section is there, the scale option changes the unit of the sizes, the
// per-loader table lists exactly the live loaders, and bad arguments are refused.
#include <gtest/gtest.h>
#include <metaspace/metaspace.h>
#include <metaspace/metaspace.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "unit/stats/random_workload.hpp"

namespace metaspace::test {
namespace {

std::string report_text(ms_metaspace_t* ms, const ms_report_options_t* options) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(ms_print_report(ms, f, options), MS_OK) << ms_last_error_text();
  std::fclose(f);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

// The line of `text` that starts (after indentation) with `label`, within the section that
// starts with `section`.
std::string line_of(const std::string& text, const std::string& section, const std::string& label) {
  size_t at = text.find(section);
  if (at == std::string::npos) return {};
  at = text.find("\n  " + label, at);
  if (at == std::string::npos) return {};
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

class ReportText : public ::testing::Test {
 protected:
  void SetUp() override {
    ms_ = ms_create(nullptr);
    ASSERT_NE(ms_, nullptr) << ms_last_error_text();
    work_ = std::make_unique<RandomWorkload>(ms_, 42);
    for (int i = 0; i < 200; i++) work_->step();
    for (int i = 0; i < 3; i++) work_->create();
  }
  void TearDown() override {
    work_.reset();
    ms_destroy(ms_);
  }
  ms_metaspace_t* ms_ = nullptr;
  std::unique_ptr<RandomWorkload> work_;
};

TEST_F(ReportText, HasEverySection) {
  ms_report_options_t all{0, 0, 1, 1, 1};
  std::string text = report_text(ms_, &all);
  for (const char* section :
       {"Usage per loader (", "Usage per loader kind:", "Total usage - ", "Virtual space:",
        "Chunk freelists:", "Waste (", "Settings:", "free in chunks in use:",
        "free chunks (committed):", "deallocated blocks:", "salvaged chunk tails:",
        "class alignment gaps:", "fences (checked mode):", "overhead (bookkeeping):",
        "Overhead (bookkeeping), where it lies:", "node ranges (commit masks",
        "chunk headers", "loader objects:", "reclaim policy:        balanced", "commit granule:", "root chunk:",
        "class alignment:       8 bytes (narrow pointer shift 3", "max committed:         unlimited",
        "GC threshold:", "checked mode:          off"}) {
    EXPECT_NE(text.find(section), std::string::npos) << section << "\n" << text;
  }
  // Defaults: no per-loader table.
  std::string defaults = report_text(ms_, nullptr);
  EXPECT_EQ(defaults.find("Usage per loader ("), std::string::npos);
  EXPECT_NE(defaults.find("Usage per loader kind:"), std::string::npos);
  EXPECT_NE(defaults.find("    level "), std::string::npos);
}

TEST_F(ReportText, ScaleSetsTheUnit) {
  ms_stats_t st;
  ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
  size_t committed = st.total.committed_bytes;
  ASSERT_GT(committed, 0u);
  auto both = [&](char scale) {
    ms_report_options_t o{0, scale, 0, 0, 0};
    return line_of(report_text(ms_, &o), "Total usage", "both:");
  };
  char expected[64];
  std::snprintf(expected, sizeof expected, " %zu B ", committed);
  EXPECT_NE(both('B').find(expected), std::string::npos) << both('B');
  std::snprintf(expected, sizeof expected, " %.2f KiB ", double(committed) / 1024);
  EXPECT_NE(both('K').find(expected), std::string::npos) << both('K');
  std::snprintf(expected, sizeof expected, " %.2f MiB ", double(committed) / (1024 * 1024));
  EXPECT_NE(both('M').find(expected), std::string::npos) << both('M');
  EXPECT_NE(both('m').find(expected), std::string::npos) << both('m');
  EXPECT_NE(both('G').find(" GiB "), std::string::npos) << both('G');
  EXPECT_EQ(both('G').find("MiB"), std::string::npos) << both('G');
  // Dynamic: each value in the largest unit it reaches; the class space reservation is 1 GiB.
  std::string dynamic = both(0);
  EXPECT_NE(dynamic.find("GiB"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("MiB"), std::string::npos) << dynamic;
}

TEST_F(ReportText, PerLoaderTableListsTheLiveLoaders) {
  ms_report_options_t o{0, 0, 1, 0, 0};
  std::string text = report_text(ms_, &o);
  std::vector<ms_loader_t*> live = work_->live();
  ASSERT_FALSE(live.empty());
  char header[64];
  std::snprintf(header, sizeof header, "Usage per loader (%zu loaders", live.size());
  EXPECT_NE(text.find(header), std::string::npos) << text;
  for (ms_loader_t* l : live) {
    char id[32];
    std::snprintf(id, sizeof id, "\n  %p ", static_cast<void*>(l));
    EXPECT_NE(text.find(id), std::string::npos) << id << "\n" << text;
  }
  // A destroyed loader disappears from the table.
  ms_loader_t* dead = ms_loader_create(ms_, MS_LOADER_MICRO, 0);
  ASSERT_NE(ms_allocate(dead, MS_SPACE_CLASS, 600), nullptr);
  char id[32];
  std::snprintf(id, sizeof id, "\n  %p ", static_cast<void*>(dead));
  EXPECT_NE(report_text(ms_, &o).find(id), std::string::npos);
  ASSERT_EQ(ms_loader_destroy(dead), MS_OK);
  EXPECT_EQ(report_text(ms_, &o).find(id), std::string::npos);
}

TEST(ReportArguments, Refused) {
  ms_metaspace_t* ms = ms_create(nullptr);
  ASSERT_NE(ms, nullptr);
  EXPECT_EQ(ms_print_report(nullptr, stdout, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_print_report(ms, nullptr, nullptr), MS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ms_write_report_json(nullptr, stdout, nullptr), MS_ERR_INVALID_ARGUMENT);
  ms_report_options_t bad{0, 'X', 0, 0, 0};
  EXPECT_EQ(ms_print_report(ms, stdout, &bad), MS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ms_last_error_text()).find("scale"), std::string::npos);
  EXPECT_EQ(ms_write_report_json(ms, stdout, &bad), MS_ERR_INVALID_ARGUMENT);
  ms_destroy(ms);
}

TEST(ReportCpp, WrappersWork) {
  ms::Metaspace ms(ms::Settings().checked(true));
  ms::Loader l = ms.create_loader(MS_LOADER_STANDARD);
  ASSERT_NE(l.allocate_class(700), nullptr);
  std::string json = ms.report_json();
  EXPECT_NE(json.find("\"schema\": \"libmetaspace.report\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"checked\": true"), std::string::npos);
  FILE* devnull = std::fopen("/dev/null", "w");
  ASSERT_NE(devnull, nullptr);
  EXPECT_NO_THROW(ms.print_report(devnull));
  ms_report_options_t bad{0, 'Q', 0, 0, 0};
  EXPECT_THROW(ms.print_report(devnull, &bad), ms::Error);
  std::fclose(devnull);
}

}  // namespace
}  // namespace metaspace::test
