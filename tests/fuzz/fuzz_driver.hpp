// The API fuzzer's decoder, shared by the libFuzzer target (api_fuzzer.cpp, clang only) and the
// corpus replay test (corpus_replay_test.cpp, every compiler), so the seed corpus runs in every
// test run.
//
// An input is decoded into settings for one metaspace and a sequence of API operations on it.
// A model of live blocks is kept, so that frees of valid blocks can be generated and every
// answer of the library can be checked: blocks never overlap, keep their contents, are aligned;
// statistics add up and agree with the model; ms_verify passes after every operation. Bad calls
// are only made where the library documents what it does with them (docs/guarantees.md): double
// frees, interior pointers, wrong sizes and overruns only in checked mode; foreign pointers,
// misaligned pointers, NULL handles, size 0, huge sizes and use of destroyed loaders everywhere.
// Any violation prints what went wrong and aborts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metaspace::fuzz {

struct RunStats {
  uint64_t operations = 0;
  uint64_t allocations = 0;
  uint64_t refused = 0;       // allocations refused with an expected error
  uint64_t bad_calls = 0;     // calls that had to be refused (and were)
};

// Runs one input; aborts on any violated expectation.
RunStats run_input(const uint8_t* data, size_t size);

}  // namespace metaspace::fuzz
