#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace lab {

// MiB with two decimals: the resolution HotSpot's own reports use, so the columns compare.
inline std::string mib(std::size_t bytes) { return fmt::format("{:.2f}", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

inline double seconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// a / b, or NaN where b is zero (shown as "-"): a ratio to nothing means nothing.
inline double ratio(double a, double b) { return b > 0 ? a / b : std::numeric_limits<double>::quiet_NaN(); }

inline std::string format_ratio(double r) { return r == r ? fmt::format("{:.2f}", r) : std::string("-"); }
// Three decimals, where a ratio is read against the 1.05 goal: 1.0545 must not print as 1.05.
inline std::string format_ratio3(double r) { return r == r ? fmt::format("{:.3f}", r) : std::string("-"); }

}  // namespace lab
