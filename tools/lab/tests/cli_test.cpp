#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/elastic_backend.hpp"
#include "backends/malloc_backend.hpp"
#include "cli.hpp"

namespace lab {
namespace {

int run(std::vector<std::string> args) {
  register_elastic_backends();
  register_malloc_backends();
  args.insert(args.begin(), "metaspace-lab");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return run_cli(static_cast<int>(argv.size()), argv.data());
}

void expect_usage_error(std::vector<std::string> args, const std::string& message) {
  testing::internal::CaptureStderr();
  testing::internal::CaptureStdout();
  const int status = run(args);
  testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(status, 2) << err;
  EXPECT_NE(err.find(message), std::string::npos) << err;
}

TEST(Cli, BadFlagsGiveAClearMessageAndExitStatus2) {
  expect_usage_error({"interleaved", "--loaders", "0"}, "--loaders must be at least 1");
  expect_usage_error({"interleaved", "--no-such-flag"}, "--no-such-flag");
  expect_usage_error({"interleaved", "--loaders", "many"}, "many");
  expect_usage_error({"interleaved", "--backends", "tcmalloc"}, "unknown backend 'tcmalloc'");
  expect_usage_error({"interleaved", "--backends", "jemalloc"}, "metaspace-lab-jemalloc");
  expect_usage_error({"one-loader", "--alignments", "8,100"}, "100 is not a power of 2");
  expect_usage_error({"compare", "interleaved", "--class-alignment", "3"}, "--class-alignment");
  expect_usage_error({"interleaved", "--small-fraction", "0.9", "--medium-fraction", "0.2"}, "--small-fraction");
  expect_usage_error({}, "A subcommand is required");
}

TEST(Cli, ATinyRunPrintsTheTableAndTheVerdict) {
  testing::internal::CaptureStdout();
  const int status = run({"interleaved", "--backends", "elastic,malloc", "--loaders", "5", "--classes-per-loader",
                          "20", "--quiet", "--no-files"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("comm/live"), std::string::npos);
  EXPECT_NE(out.find("hotspot-25"), std::string::npos);
  EXPECT_NE(out.find("verdict:"), std::string::npos);
  EXPECT_NE(out.find("max footprint/live      elastic"), std::string::npos) << out;
  EXPECT_NE(out.find("max committed/used      hotspot-25"), std::string::npos) << out;
}

}  // namespace
}  // namespace lab
