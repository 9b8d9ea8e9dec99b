#include "trace/jvm_recording.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace lab {

int run_jvm_recording(const std::vector<std::string>& command, const std::string& log_path,
                      const std::string& vm_output_path) {
  if (command.empty()) throw std::invalid_argument("record: no command given after --");
  for (const auto& p : {log_path, vm_output_path})
    if (p.find(' ') != std::string::npos) throw std::invalid_argument("record: path with a space: " + p);
  // filecount=0: no rotation, or the head of the log (the boot loader's birth) is lost at 20 MB.
  // -DisplayVMOutput keeps the exit statistics out of the program's stdout; LogVMOutput puts them
  // in a file of their own.
  std::string options = "-Xlog:metaspace*=trace:file=" + log_path + ":uptimenanos,tid:filecount=0"
                        " -XX:+UnlockDiagnosticVMOptions -XX:+PrintMetaspaceStatisticsAtExit"
                        " -XX:+LogVMOutput -XX:LogFile=" + vm_output_path + " -XX:-DisplayVMOutput";
  if (const char* existing = std::getenv("JAVA_TOOL_OPTIONS")) options = std::string(existing) + " " + options;

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("record: fork: ") + std::strerror(errno));
  if (pid == 0) {
    setenv("JAVA_TOOL_OPTIONS", options.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "record: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("record: waitpid: ") + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace lab
