// What the kernel says about this process's memory, read from /proc/self: resident set size and
// the mappings (VMAs). Tests use it to check that uncommitting really returns memory and that it
// does not split the reservation into many mappings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace metaspace::test {

// Resident set size in bytes (second field of /proc/self/statm, in pages).
size_t rss_bytes();

struct Mapping {
  uintptr_t start;
  uintptr_t end;
  std::string perms;  // e.g. "rw-p", "---p"
};

// Every mapping of the process, in address order.
std::vector<Mapping> mappings();
size_t mapping_count();
// The mappings that overlap [p, p + bytes). A mapping that extends beyond the range (the kernel
// merges neighbours with equal flags) counts once.
std::vector<Mapping> mappings_in(const void* p, size_t bytes);

}  // namespace metaspace::test
