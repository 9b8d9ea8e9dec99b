#pragma once

namespace lab {

// First line of every trace; the number is the format version (docs/trace-format.md).
inline constexpr const char* kTraceMagic = "metaspace-trace 1";

}  // namespace lab
