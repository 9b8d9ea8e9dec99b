#include "output/plot.hpp"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "compare/subprocess.hpp"
#include "file_locator.hpp"

namespace lab {
namespace {

std::string find_script() {
  if (const char* env = std::getenv("METASPACE_LAB_PLOT_SCRIPT")) return env;
  for (const auto& dir : data_search_dirs("tools/plot")) {
    auto p = dir / "plot_lab.py";
    if (std::filesystem::exists(p)) return p.string();
  }
  return {};
}

}  // namespace

std::string render_plot(const std::string& json_path, const std::string& png_path) {
  const std::string script = find_script();
  if (script.empty())
    return "no plot: tools/plot/plot_lab.py not found (set METASPACE_LAB_PLOT_SCRIPT to its path)";
  // The python3 first on PATH may be a virtualenv or pyenv without matplotlib while the system's
  // has it (Debian's python3-matplotlib), so try them in turn.
  std::vector<std::string> pythons;
  if (const char* env = std::getenv("METASPACE_LAB_PYTHON")) pythons.push_back(env);
  pythons.push_back("python3");
  pythons.push_back("/usr/bin/python3");
  bool any_python = false;
  for (const auto& python : pythons) {
    const int probe = run_process({python, "-c", "import matplotlib"}, {}, ChildOutput::discard);
    if (probe == 127) continue;
    any_python = true;
    if (probe != 0) continue;
    const int status = run_process({python, script, json_path, png_path});
    if (status == 0) return {};
    return "no plot: " + script + " failed with exit status " + std::to_string(status);
  }
  if (!any_python) return "no plot: python3 is not installed";
  return "no plot: no python3 here can import matplotlib (Debian: apt-get install python3-matplotlib, or set "
         "METASPACE_LAB_PYTHON to an interpreter that has it)";
}

}  // namespace lab
