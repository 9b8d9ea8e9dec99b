// libFuzzer entry point of the archive reader: see archive_fuzz_driver.hpp. Built with api_fuzzer
// by tests/fuzz/CMakeLists.txt when the compiler is clang; run.sh runs it briefly after the API.
#include <cstddef>
#include <cstdint>

#include "fuzz/archive_fuzz_driver.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaspace::fuzz::run_archive_input(data, size);
  return 0;
}
