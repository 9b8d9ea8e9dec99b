// What the kernel says about this process's memory, read from /proc/self: the one reader of the
// tests, the lab and the benchmarks. Resident set size (statm), proportional set size
// (smaps_rollup, where the kernel has it), the peak resident size (status), and the mappings
// (VMAs) that the library's reservations and protections turn into.
//
// Header-only and libc-only, so that each of its users (GoogleTest binaries, the lab's core
// library, plain benchmark programs) takes it without a new target to link. Every figure is 0
// (or empty) if the file cannot be read: a sandbox without /proc measures nothing rather than
// crashing.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace proc_memory {

inline std::size_t page_bytes() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Resident set size (VmRSS) in bytes: the second field of /proc/self/statm, in pages. statm is
// one short line, cheaper to read than status, which matters to the lab sampling every step.
inline std::size_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size_pages = 0;
  unsigned long resident_pages = 0;
  int n = std::fscanf(f, "%lu %lu", &size_pages, &resident_pages);
  std::fclose(f);
  return n == 2 ? resident_pages * page_bytes() : 0;
}

// A "Name:   123 kB" field of a /proc/self file, in bytes; nothing if the file or field is
// missing (smaps_rollup needs Linux 4.14; VmHWM is reset by writing "5" to clear_refs).
inline std::optional<std::size_t> kib_field(const char* file, const char* name) {
  std::FILE* f = std::fopen(file, "r");
  if (f == nullptr) return std::nullopt;
  char line[256];
  std::size_t len = std::strlen(name);
  std::optional<std::size_t> bytes;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, name, len) == 0 && line[len] == ':') {
      bytes = static_cast<std::size_t>(std::strtoull(line + len + 1, nullptr, 10)) * 1024;
      break;
    }
  }
  std::fclose(f);
  return bytes;
}

// Proportional set size: resident pages, shared ones divided among their sharers.
inline std::optional<std::size_t> proportional_bytes() {
  return kib_field("/proc/self/smaps_rollup", "Pss");
}

// Peak resident set size since the process started or the peak was last reset.
inline std::size_t peak_resident_bytes() {
  return kib_field("/proc/self/status", "VmHWM").value_or(0);
}

// Resets the peak resident size to the current one ("5" into clear_refs, Linux 4.0); false where
// that is refused.
inline bool reset_peak_resident() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Number of mappings: lines of /proc/self/maps, counted without parsing or allocating (the lab
// samples it at every step, with up to tens of thousands of mappings).
inline std::size_t mapping_count() {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return 0;
  char buf[1 << 14];
  std::size_t lines = 0;
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    for (std::size_t i = 0; i < n; i++) lines += buf[i] == '\n';
  }
  std::fclose(f);
  return lines;
}

struct Mapping {
  std::uintptr_t start;
  std::uintptr_t end;
  std::string perms;  // e.g. "rw-p", "---p"
};

// Every mapping of the process, in address order.
inline std::vector<Mapping> mappings() {
  std::vector<Mapping> result;
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return result;
  // Lines are longer than this only through their path, which is skipped.
  char line[512];
  bool line_start = true;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    bool starts_here = line_start;
    line_start = std::strchr(line, '\n') != nullptr;
    if (!starts_here) continue;
    unsigned long long start = 0;
    unsigned long long end = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%llx-%llx %7s", &start, &end, perms) != 3) continue;
    result.push_back({static_cast<std::uintptr_t>(start), static_cast<std::uintptr_t>(end), perms});
  }
  std::fclose(f);
  return result;
}

// The mappings that overlap [p, p + bytes). A mapping that extends beyond the range (the kernel
// merges neighbours with equal flags) counts once.
inline std::vector<Mapping> mappings_in(const void* p, std::size_t bytes) {
  std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t hi = lo + bytes;
  std::vector<Mapping> result;
  for (const Mapping& m : mappings()) {
    if (m.start < hi && m.end > lo) result.push_back(m);
  }
  return result;
}

// The VmFlags line of /proc/self/smaps for the mapping holding p ("rd wr mr mw me ac nh", ...),
// or empty if no mapping holds it.
inline std::string vm_flags_at(const void* p) {
  std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return {};
  char line[512];
  bool inside = false;
  std::string flags;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long start = 0;
    unsigned long long end = 0;
    if (std::sscanf(line, "%llx-%llx ", &start, &end) == 2 && std::strchr(line, ' ') != nullptr &&
        std::strncmp(line, "VmFlags", 7) != 0) {
      inside = start <= a && a < end;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line + 8;
      while (!flags.empty() && (flags.back() == '\n' || flags.back() == ' ')) flags.pop_back();
      break;
    }
  }
  std::fclose(f);
  return flags;
}

}  // namespace proc_memory
