#include "output/plot.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "compare/subprocess.hpp"
#include "file_locator.hpp"

namespace lab {
namespace {

// plot_lab.py's exit status when matplotlib cannot be imported.
constexpr int kNoMatplotlib = 3;

PlotBatch* g_current = nullptr;

std::string find_script() {
  if (const char* env = std::getenv("METASPACE_LAB_PLOT_SCRIPT")) return env;
  for (const auto& dir : data_search_dirs("tools/plot")) {
    auto p = dir / "plot_lab.py";
    if (std::filesystem::exists(p)) return p.string();
  }
  return {};
}

// Runs plot_lab.py with `args` (JSON/PNG pairs and flags). The python3 first on PATH may be a
// virtualenv or pyenv without matplotlib while the system's has it (Debian's python3-matplotlib),
// so the next one is tried when the script says matplotlib is missing (no separate probe: one
// interpreter start is most of a figure's cost).
std::string run_script(const std::vector<std::string>& args) {
  const std::string script = find_script();
  if (script.empty())
    return "no plot: tools/plot/plot_lab.py not found (set METASPACE_LAB_PLOT_SCRIPT to its path)";
  std::vector<std::string> pythons;
  if (const char* env = std::getenv("METASPACE_LAB_PYTHON")) pythons.push_back(env);
  pythons.push_back("python3");
  pythons.push_back("/usr/bin/python3");
  bool any_python = false;
  for (const auto& python : pythons) {
    std::vector<std::string> argv = {python, script, "--quiet-if-missing"};
    argv.insert(argv.end(), args.begin(), args.end());
    const int status = run_process(argv);
    if (status == 127) continue;
    any_python = true;
    if (status == kNoMatplotlib) continue;
    if (status == 0) return {};
    return "no plot: " + script + " failed with exit status " + std::to_string(status);
  }
  if (!any_python) return "no plot: python3 is not installed";
  return "no plot: no python3 here can import matplotlib (Debian: apt-get install python3-matplotlib, or set "
         "METASPACE_LAB_PYTHON to an interpreter that has it)";
}

}  // namespace

std::string render_plot(const std::string& json_path, const std::string& png_path) {
  return run_script({json_path, png_path});
}

PlotBatch::PlotBatch(bool progress) : progress_(progress) {
  if (!g_current) g_current = this;
}

PlotBatch::~PlotBatch() {
  try {
    draw();
  } catch (...) {
  }
  if (g_current == this) g_current = nullptr;
}

PlotBatch* PlotBatch::current() { return g_current; }

namespace {

// The interpreters to try, in turn: METASPACE_LAB_PYTHON, the python3 on PATH (a virtualenv or
// pyenv may lack matplotlib while the system's has it), the system's.
std::vector<std::string> python_candidates() {
  std::vector<std::string> pythons;
  if (const char* env = std::getenv("METASPACE_LAB_PYTHON")) pythons.push_back(env);
  pythons.push_back("python3");
  pythons.push_back("/usr/bin/python3");
  return pythons;
}

}  // namespace

// `plot_lab.py --stdin` with the next candidate interpreter: the script reads "JSON<tab>PNG" lines
// and draws each as it arrives. Every job queued so far is sent to it.
bool PlotBatch::start_next() {
  const std::string script = find_script();
  const auto pythons = python_candidates();
  while (!script.empty() && next_python_ < pythons.size()) {
    std::vector<std::string> argv = {pythons[next_python_++], script, "--stdin", "--quiet-if-missing"};
    if (progress_) argv.push_back("--progress");
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return false;
    }
    if (pid == 0) {
      dup2(fds[0], STDIN_FILENO);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(fds[0]);
    pid_ = pid;
    to_script_ = fds[1];
    for (const auto& j : jobs_) send(j);
    if (to_script_ >= 0) return true;
    finish();  // died at once: try the next
  }
  return false;
}

void PlotBatch::send(const Job& job) {
  if (to_script_ < 0) return;
  const std::string line = job.json + "\t" + job.png + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    // SIGPIPE is ignored: a script that died shows as EPIPE here.
    const ssize_t n = write(to_script_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(to_script_);
      to_script_ = -1;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

// Closes the script's input and waits for it: its exit status (127: never started).
int PlotBatch::finish() {
  if (to_script_ >= 0) close(to_script_);
  to_script_ = -1;
  if (pid_ <= 0) return 127;
  int raw = 0;
  while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
}

// True when the script has already ended because it cannot draw (no matplotlib, no interpreter).
bool PlotBatch::script_cannot_draw() {
  if (pid_ <= 0) return true;
  int raw = 0;
  const pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r != pid_) return to_script_ < 0;
  pid_ = -1;
  if (to_script_ >= 0) close(to_script_);
  to_script_ = -1;
  const int status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  return status == kNoMatplotlib || status == 127;
}

void PlotBatch::add(std::string json, std::string png, std::function<void(const std::string&)> then) {
  // A figure of an earlier run must not pass for one of this run.
  std::error_code ec;
  std::filesystem::remove(png, ec);
  jobs_.push_back({std::move(json), std::move(png), std::move(then)});
  if (!started_) {
    started_ = true;
    std::signal(SIGPIPE, SIG_IGN);
    start_next();
    return;
  }
  if (pid_ > 0 && script_cannot_draw()) {
    start_next();
    return;
  }
  send(jobs_.back());
}

void PlotBatch::draw() {
  if (jobs_.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  std::fflush(stdout);
  int status = finish();
  while ((status == kNoMatplotlib || status == 127) && start_next()) status = finish();
  std::vector<Job> jobs = std::move(jobs_);
  jobs_.clear();
  started_ = false;
  next_python_ = 0;
  std::string problem;
  if (status == kNoMatplotlib || status == 127) {
    problem = "no plot: no python3 here can import matplotlib (Debian: apt-get install python3-matplotlib, or set "
              "METASPACE_LAB_PYTHON to an interpreter that has it)";
    if (find_script().empty())
      problem = "no plot: tools/plot/plot_lab.py not found (set METASPACE_LAB_PLOT_SCRIPT to its path)";
  } else if (status != 0) {
    problem = "no plot: tools/plot/plot_lab.py failed with exit status " + std::to_string(status);
  }
  if (progress_ && problem.empty())
    std::fprintf(stderr, "%zu figure%s drawn by one python3 process (%.1f s after the last was queued)\n",
                 jobs.size(), jobs.size() == 1 ? "" : "s",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (auto& j : jobs) {
    std::error_code ec;
    // The script draws every figure it can and fails at the end if one failed: a figure that
    // exists was drawn.
    std::string own;
    if (!std::filesystem::exists(j.png, ec)) own = problem.empty() ? "no plot: " + j.png + " was not drawn" : problem;
    if (j.then) j.then(own);
  }
}

}  // namespace lab
