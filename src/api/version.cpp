// ms_version(): the linked library's version. METASPACE_VERSION_STRING comes from CMake, which
// read it from the MS_VERSION_* macros of metaspace.h; the static_assert keeps the two equal
// even for a build that defines the string by hand.
#include <metaspace/metaspace.h>

#include <string_view>

#include "common/version.hpp"

namespace {

constexpr std::string_view kVersion = metaspace::kLibraryVersion;

constexpr bool version_matches_header() {
  char expected[3 * 11 + 3] = {};
  size_t n = 0;
  for (unsigned part : {MS_VERSION_MAJOR, MS_VERSION_MINOR, MS_VERSION_PATCH}) {
    char digits[11];
    size_t d = 0;
    do {
      digits[d++] = static_cast<char>('0' + part % 10);
      part /= 10;
    } while (part != 0);
    while (d > 0) expected[n++] = digits[--d];
    expected[n++] = '.';
  }
  return std::string_view(expected, n - 1) == kVersion;
}
static_assert(version_matches_header(), "METASPACE_VERSION_STRING differs from MS_VERSION_*");

}  // namespace

extern "C" const char* ms_version(void) noexcept { return metaspace::kLibraryVersion; }
