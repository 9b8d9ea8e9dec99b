#pragma once

#include <string>
#include <vector>

namespace lab {

// Runs a JVM command (java, javac, any JDK launcher) with the metaspace trace logging and the exit
// statistics switched on through JAVA_TOOL_OPTIONS, which every launcher's VM reads; stdin, stdout
// and stderr stay the command's. Returns the command's exit status (128 + signal if killed).
// The paths must not contain spaces (JAVA_TOOL_OPTIONS splits on them).
int run_jvm_recording(const std::vector<std::string>& command, const std::string& log_path,
                      const std::string& vm_output_path);

}  // namespace lab
