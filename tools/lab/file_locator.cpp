#include "file_locator.hpp"

#include <unistd.h>

namespace lab {

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

std::vector<std::filesystem::path> data_search_dirs(const std::string& relative) {
  std::vector<std::filesystem::path> dirs;
  auto dir = executable_dir();
  for (int up = 0; up < 6 && !dir.empty(); ++up) {
    dirs.push_back(dir / "share" / "metaspace-lab");
    dirs.push_back(dir / relative);
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return dirs;
}

}  // namespace lab
