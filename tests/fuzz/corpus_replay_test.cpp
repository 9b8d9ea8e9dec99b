// Runs the fuzzer's decoder on the committed seed corpus and on a fixed set of pseudo-random
// inputs, with whatever compiler builds the tests, so that the corpus is exercised in every test
// run (and under ASan+UBSan in the debug preset). A violated expectation aborts the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "fuzz/fuzz_driver.hpp"

namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(FuzzCorpus, SeedCorpusReplays) {
  std::filesystem::path dir = METASPACE_FUZZ_CORPUS_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 4u) << "seed corpus missing";
  uint64_t ops = 0, allocations = 0, bad = 0;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    std::vector<uint8_t> data = read_file(f);
    metaspace::fuzz::RunStats s = metaspace::fuzz::run_input(data.data(), data.size());
    ops += s.operations;
    allocations += s.allocations;
    bad += s.bad_calls;
  }
  EXPECT_GT(ops, 100u);
  EXPECT_GT(allocations, 50u);
  EXPECT_GT(bad, 10u);
  std::printf("corpus: %zu inputs, %llu operations, %llu allocations, %llu bad calls refused\n",
              files.size(), (unsigned long long)ops, (unsigned long long)allocations,
              (unsigned long long)bad);
}

TEST(FuzzCorpus, PseudoRandomInputs) {
  std::mt19937_64 rng(20261122);
  uint64_t ops = 0;
  for (int i = 0; i < 200; i++) {
    std::vector<uint8_t> data(16 + rng() % 2048);
    for (auto& b : data) b = static_cast<uint8_t>(rng());
    ops += metaspace::fuzz::run_input(data.data(), data.size()).operations;
  }
  EXPECT_GT(ops, 1000u);
}

}  // namespace
