// libFuzzer entry point: see fuzz_driver.hpp for what an input means and what is checked.
// Built by tests/fuzz/CMakeLists.txt when the compiler is clang; run with tests/fuzz/run.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "fuzz/fuzz_driver.hpp"

namespace {

// Totals over the whole run, printed when libFuzzer exits (run.sh reports them).
struct Totals {
  uint64_t inputs = 0, operations = 0, allocations = 0, bad_calls = 0;
  ~Totals() {
    std::fprintf(stderr, "api_fuzzer: %llu inputs, %llu API operations (%llu allocations, %llu "
                 "bad calls refused as documented)\n", (unsigned long long)inputs,
                 (unsigned long long)operations, (unsigned long long)allocations,
                 (unsigned long long)bad_calls);
  }
} totals;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaspace::fuzz::RunStats s = metaspace::fuzz::run_input(data, size);
  totals.inputs++;
  totals.operations += s.operations;
  totals.allocations += s.allocations;
  totals.bad_calls += s.bad_calls;
  return 0;
}
