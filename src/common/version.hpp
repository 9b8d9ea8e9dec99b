// The library's version, "MAJOR.MINOR.PATCH", for the layers below the API (the archive writes it
// into its files and compares it when mapping one). CMake defines METASPACE_VERSION_STRING from
// metaspace.h's MS_VERSION_* macros; api/version.cpp checks that the two agree and returns it as
// ms_version().
#pragma once

#ifndef METASPACE_VERSION_STRING
#error "METASPACE_VERSION_STRING is set by CMakeLists.txt"
#endif

namespace metaspace {

inline constexpr const char* kLibraryVersion = METASPACE_VERSION_STRING;

}  // namespace metaspace
