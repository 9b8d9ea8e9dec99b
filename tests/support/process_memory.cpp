#include "support/process_memory.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace metaspace::test {

size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t size_pages = 0;
  size_t resident_pages = 0;
  in >> size_pages >> resident_pages;
  return resident_pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::vector<Mapping> mappings() {
  std::vector<Mapping> result;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long start = 0;
    unsigned long long end = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s", &start, &end, perms) != 3) continue;
    result.push_back({static_cast<uintptr_t>(start), static_cast<uintptr_t>(end), perms});
  }
  return result;
}

size_t mapping_count() { return mappings().size(); }

std::vector<Mapping> mappings_in(const void* p, size_t bytes) {
  uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  uintptr_t hi = lo + bytes;
  std::vector<Mapping> result;
  for (const Mapping& m : mappings()) {
    if (m.start < hi && m.end > lo) result.push_back(m);
  }
  return result;
}

}  // namespace metaspace::test
