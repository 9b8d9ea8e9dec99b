#pragma once

#include <string>

#include "run_result.hpp"

namespace lab {

// The samples flattened, one row per (backend, sample), reference series included; the extra
// figures become columns (the union over all samples, empty where a backend has none).
void write_csv(const RunResult& result, const std::string& path);

}  // namespace lab
