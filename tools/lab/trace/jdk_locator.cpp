#include "trace/jdk_locator.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "compare/subprocess.hpp"

namespace fs = std::filesystem;

namespace lab {
namespace {

// JAVA_VERSION="17.0.19" from the JDK's `release` file.
std::string release_version(const fs::path& home) {
  std::ifstream in(home / "release");
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "JAVA_VERSION=\"";
    if (line.rfind(key, 0) != 0) continue;
    const auto end = line.find('"', key.size());
    return line.substr(key.size(), end == std::string::npos ? std::string::npos : end - key.size());
  }
  return {};
}

// The quoted version of `java -version` (printed on stderr, so through a shell redirection).
std::string launcher_version(const fs::path& java) {
  std::string out;
  run_process({"/bin/sh", "-c", "\"$0\" -version 2>&1", java.string()},
              [&](const std::string& line) { out += line + "\n"; });
  const auto open = out.find("version \"");
  if (open == std::string::npos) return {};
  const auto begin = open + 9;
  const auto close = out.find('"', begin);
  return close == std::string::npos ? std::string() : out.substr(begin, close - begin);
}

fs::path on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// The home of a launcher: /usr/bin/java -> /usr/lib/jvm/X/bin/java -> /usr/lib/jvm/X.
fs::path home_of_launcher(const fs::path& launcher) {
  std::error_code ec;
  const fs::path real = fs::canonical(launcher, ec);
  if (ec) return {};
  return real.parent_path().parent_path();
}

}  // namespace

int jdk_feature(const std::string& version) {
  int first = 0, second = 0;
  std::size_t i = 0;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i])))
    first = first * 10 + (version[i++] - '0');
  if (first == 1 && i < version.size() && version[i] == '.') {
    ++i;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i])))
      second = second * 10 + (version[i++] - '0');
    return second;
  }
  return first;
}

Jdk locate_jdk(const std::string& explicit_java, const std::string& launcher) {
  Jdk jdk;
  fs::path home;
  if (launcher.find('/') != std::string::npos) {
    // A launcher given by its path is the JDK, whatever JAVA_HOME says.
    if (!explicit_java.empty())
      throw std::runtime_error(fmt::format("--java {} and the launcher {} name two JDKs: give the launcher by its "
                                           "name (java, javac, ...) with --java, or its path alone",
                                           explicit_java, launcher));
    jdk.chosen_by = "the command's launcher";
    home = home_of_launcher(launcher);
    if (home.empty()) throw std::runtime_error(fmt::format("{}: no such launcher", launcher));
  } else if (!explicit_java.empty()) {
    jdk.chosen_by = "--java";
    std::error_code ec;
    home = fs::is_directory(explicit_java, ec) ? fs::path(explicit_java) : home_of_launcher(explicit_java);
    if (home.empty() || !fs::exists(home / "bin" / "java"))
      throw std::runtime_error(fmt::format("--java {}: not a JDK (no bin/java under it)", explicit_java));
  } else if (const char* env = std::getenv("JAVA_HOME"); env && *env) {
    jdk.chosen_by = "JAVA_HOME";
    home = env;
    if (!fs::exists(home / "bin" / "java"))
      throw std::runtime_error(fmt::format("JAVA_HOME={} is not a JDK (no bin/java under it); unset it or pass "
                                           "--java JDK_HOME",
                                           env));
  } else {
    jdk.chosen_by = fmt::format("the {} on PATH", launcher);
    const fs::path found = on_path(launcher);
    if (found.empty())
      throw std::runtime_error(fmt::format("{} is not on PATH: pass --java JDK_HOME or set JAVA_HOME", launcher));
    home = home_of_launcher(found);
  }
  std::error_code ec;
  const fs::path canonical = fs::canonical(home, ec);
  jdk.home = (ec ? home : canonical).string();
  jdk.version = release_version(jdk.home);
  if (jdk.version.empty() && fs::exists(fs::path(jdk.home) / "bin" / "java"))
    jdk.version = launcher_version(fs::path(jdk.home) / "bin" / "java");
  jdk.feature = jdk_feature(jdk.version);
  return jdk;
}

std::string jdk_launcher(const Jdk& jdk, const std::string& launcher) {
  if (launcher.find('/') != std::string::npos || jdk.home.empty()) return launcher;
  const fs::path p = fs::path(jdk.home) / "bin" / launcher;
  std::error_code ec;
  return fs::exists(p, ec) ? p.string() : launcher;
}

}  // namespace lab
