#pragma once

#include <string>

#include "run_result.hpp"

namespace lab {

// HotSpot's measured step-by-step series (data/hotspot-jdk25-noshare-interleaved.csv). Its "live"
// is its used: the JVM does not report what the program requested. Throws std::runtime_error when
// the file is missing or malformed.
ReferenceSeries load_hotspot_reference(const std::string& csv_path);

// Where the data file is: --reference if given, else next to the sources (compiled in), else
// relative to the executable. Empty when not found.
std::string find_hotspot_reference(const std::string& explicit_path);

}  // namespace lab
