#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lab {

// The directory of the running executable (/proc/self/exe).
std::filesystem::path executable_dir();

// Candidate directories for `relative` (a path inside the source tree, e.g. "tools/plot"): the
// source tree the lab was built from, then the executable's directory and its parents, so that the
// data and the plot script are found from a build tree, a copied build or an installed tree.
std::vector<std::filesystem::path> data_search_dirs(const std::string& relative);

}  // namespace lab
