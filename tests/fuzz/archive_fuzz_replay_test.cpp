// The archive fuzzer's driver over a fixed set of pseudo-random inputs in every test run (and
// under ASan+UBSan in the debug preset): raw garbage, edits of a valid archive with and without
// the checksums recomputed, truncations, special files, truncation by another thread while
// ms_create reads the file. A violated expectation aborts the test.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fuzz/archive_fuzz_driver.hpp"

namespace {

TEST(ArchiveFuzz, DamagedArchivesAreRefusedOrMappedNeverCrash) {
  std::mt19937 rng(15);
  size_t mapped = 0, refused = 0;
  for (int i = 0; i < 400; i++) {
    std::vector<uint8_t> input(1 + rng() % 64);
    for (auto& b : input) b = static_cast<uint8_t>(rng());
    // Mostly edits of the valid archive, half of them resealed (so they reach the deep checks).
    if (i % 8 != 0) input[0] = static_cast<uint8_t>(1 | (rng() % 2 ? 2 : 0) | (i % 5 == 0 ? 4 : 0));
    if (i % 16 == 1) input.resize(1);  // the valid archive unchanged
    if (i % 32 == 2) input[0] = 8;     // a special file (FIFO, symlink to it, directory, device)
    if (i % 8 == 3 && input.size() > 1) input[0] = 1 | 16;  // truncated while ms_create reads it
    metaspace::fuzz::ArchiveRunStats s =
        metaspace::fuzz::run_archive_input(input.data(), input.size());
    (s.mapped ? mapped : refused)++;
  }
  EXPECT_GT(mapped, 10u);
  EXPECT_GT(refused, 100u);
  std::printf("archive fuzz replay: %zu mapped, %zu refused\n", mapped, refused);
}

}  // namespace
