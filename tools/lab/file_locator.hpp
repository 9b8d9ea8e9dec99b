#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lab {

// The directory of the running executable (/proc/self/exe).
std::filesystem::path executable_dir();

// Candidate directories for `relative` (a path inside the source tree, e.g. "tools/plot"), all
// relative to the running executable, never to a path compiled in: its own share/metaspace-lab
// (the build copies the files there), then for it and each parent P: P/share/metaspace-lab (an
// installed tree: PREFIX/bin/metaspace-lab, PREFIX/share/metaspace-lab) and P/relative (a build
// tree inside the source tree).
std::vector<std::filesystem::path> data_search_dirs(const std::string& relative);

}  // namespace lab
