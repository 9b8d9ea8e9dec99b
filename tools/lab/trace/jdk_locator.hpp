#pragma once

#include <string>

namespace lab {

// The JDK a `record` command runs: its home folder, its version and how it was chosen, so that
// `record` can say which JDK it found and how to pick another.
struct Jdk {
  std::string home;     // e.g. /usr/lib/jvm/java-17-openjdk-amd64; empty: not found
  std::string version;  // JAVA_VERSION of its `release` file ("17.0.19"), or of `java -version`
  int feature = 0;      // the first number of the version (1.8 -> 8); 0: unknown
  std::string chosen_by;  // "--java", "JAVA_HOME", "the java on PATH" or "the command's launcher"
};

// The feature number of a version string: "17.0.19" -> 17, "25" -> 25, "1.8.0_392" -> 8; 0 if none.
int jdk_feature(const std::string& version);

// The JDK of `launcher` when it is a path (/usr/lib/jvm/X/bin/java); else of `explicit_java` (a JDK
// home, or a launcher inside its bin/) if given, else of JAVA_HOME, else the one whose `launcher`
// (e.g. "java", "javac") PATH finds, symbolic links followed. Throws std::runtime_error when none
// is found.
Jdk locate_jdk(const std::string& explicit_java, const std::string& launcher);

// Where `launcher` lies in the JDK (home/bin/launcher), or the launcher itself when it is a path
// already or the JDK has no such file.
std::string jdk_launcher(const Jdk& jdk, const std::string& launcher);

}  // namespace lab
