#include "stats/scale.hpp"

#include <cctype>
#include <cstdio>

#include "common/units.hpp"

namespace metaspace {

bool Scale::valid(char unit) {
  char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit)));
  return u == 0 || u == 'B' || u == 'K' || u == 'M' || u == 'G';
}

Scale::Scale(char unit) : unit_(static_cast<char>(std::toupper(static_cast<unsigned char>(unit)))) {}

std::string Scale::format(size_t bytes) const {
  char unit = unit_;
  if (unit == 0) {
    unit = bytes >= GiB ? 'G' : bytes >= MiB ? 'M' : bytes >= KiB ? 'K' : 'B';
  }
  char buf[40];
  switch (unit) {
    case 'K': std::snprintf(buf, sizeof buf, "%.2f KiB", double(bytes) / KiB); break;
    case 'M': std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / MiB); break;
    case 'G': std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / GiB); break;
    default: std::snprintf(buf, sizeof buf, "%zu B", bytes); break;
  }
  return buf;
}

}  // namespace metaspace
