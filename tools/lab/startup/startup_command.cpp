#include "startup/startup_command.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "command_registry.hpp"
#include "compare/subprocess.hpp"
#include "machine_load.hpp"
#include "output/html_report.hpp"
#include "output/json_output.hpp"
#include "output/plot.hpp"
#include "output/units.hpp"
#include "run_result.hpp"
#include "startup/startup_run.hpp"

namespace lab {
namespace {

constexpr std::size_t kMaxCount = 100'000'000;  // the lab's bound on every count flag
constexpr StartupMode kModes[] = {StartupMode::build, StartupMode::map, StartupMode::relocate,
                                  StartupMode::relocate_eager};

std::string mode_label(StartupMode m) {
  switch (m) {
    case StartupMode::build: return "build (no archive)";
    case StartupMode::map: return "map at base";
    case StartupMode::relocate: return "relocate (base taken)";
    case StartupMode::relocate_eager: return "relocate, eager";
  }
  return "?";
}

// The best (least ready time) of the repeated start-ups of one mode at one thread count.
using BestTable = std::map<std::pair<StartupMode, unsigned>, StartupSample>;

class StartupCommand : public LabCommand {
 public:
  void add_to(CLI::App& app) override {
    cmd_ = app.add_subcommand("startup",
                              "start-up with the class-data archive (mapped at its base, or relocated) against "
                              "building the same metadata, each start-up in a fresh process");
    cmd_->add_option("--classes", params_.classes, "classes dumped into the archive (or built without it)")
        ->capture_default_str();
    cmd_->add_option("--loaded-after", params_.loaded_after,
                     "classes loaded after start-up by the threads into the shared app loader")
        ->capture_default_str();
    cmd_->add_option("--threads", threads_, "thread counts loading the classes after start-up, comma separated")
        ->delimiter(',')
        ->capture_default_str();
    cmd_->add_option("--repeat", repeat_, "start-ups per mode and thread count; the best is shown")
        ->capture_default_str();
    cmd_->add_option("--class-alignment", params_.class_alignment, "class alignment in bytes (8..1024)")
        ->capture_default_str();
    cmd_->add_option("--out", out_dir_, "folder for the JSON, PNG, HTML (and the archive while it runs)")
        ->capture_default_str();
    cmd_->add_flag("--quiet", quiet_, "no progress output on stderr");
    cmd_->add_flag("--no-plot", no_plot_, "do not draw the PNG");
    cmd_->add_flag("--no-files", no_files_, "print only, write no JSON/PNG/HTML");
    // One start-up in this process (what the parent runs in each child); prints one JSON line.
    cmd_->add_option("--child", child_mode_, "")->group("");
    cmd_->add_option("--archive", archive_, "")->group("");
    cmd_->add_option("--base", params_.base, "")->group("");
  }

  std::optional<int> run() override {
    if (cmd_ == nullptr || !cmd_->parsed()) return std::nullopt;
    try {
      validate();
      if (!child_mode_.empty()) return run_child();
      return run_parent();
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "metaspace-lab startup: error: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "metaspace-lab startup: %s\n", e.what());
      return 1;
    }
  }

 private:
  void validate() const {
    if (params_.classes == 0 || params_.classes > kMaxCount)
      throw std::invalid_argument(fmt::format("--classes: {} is not between 1 and {}", params_.classes, kMaxCount));
    if (params_.loaded_after > kMaxCount)
      throw std::invalid_argument(fmt::format("--loaded-after: {} is above {}", params_.loaded_after, kMaxCount));
    if (threads_.empty()) throw std::invalid_argument("--threads: give at least one thread count");
    for (unsigned t : threads_)
      if (t == 0 || t > 1024) throw std::invalid_argument(fmt::format("--threads: {} is not between 1 and 1024", t));
    if (repeat_ == 0 || repeat_ > 1000)
      throw std::invalid_argument(fmt::format("--repeat: {} is not between 1 and 1000", repeat_));
    const std::size_t a = params_.class_alignment;
    if (a < 8 || a > 1024 || (a & (a - 1)) != 0)
      throw std::invalid_argument(fmt::format("--class-alignment: {} is not a power of 2 between 8 and 1024", a));
  }

  int run_child() const {
    StartupMode mode;
    if (!parse_startup_mode(child_mode_, mode)) throw std::invalid_argument("--child: unknown mode " + child_mode_);
    const StartupSample s = run_startup(mode, threads_.front(), params_, archive_);
    std::printf("%s\n", s.to_json().dump().c_str());
    std::fflush(stdout);
    return s.error.empty() ? 0 : 1;
  }

  // One start-up in a fresh process of this executable: no start-up sees another's pages, address
  // space or page cache state of its own making.
  StartupSample in_child(StartupMode mode, unsigned threads, const std::string& archive) const {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::vector<std::string> argv = {self,
                                     "startup",
                                     "--child",
                                     startup_mode_name(mode),
                                     "--threads",
                                     std::to_string(threads),
                                     "--classes",
                                     std::to_string(params_.classes),
                                     "--loaded-after",
                                     std::to_string(params_.loaded_after),
                                     "--class-alignment",
                                     std::to_string(params_.class_alignment),
                                     "--archive",
                                     archive,
                                     "--base",
                                     std::to_string(params_.base)};
    std::string line;
    const int status = run_process(argv, [&line](const std::string& l) { line = l; });
    StartupSample s;
    s.mode = mode;
    s.threads = threads;
    try {
      if (!line.empty()) s = StartupSample::from_json(nlohmann::json::parse(line));
    } catch (const std::exception& e) {
      s.error = fmt::format("unreadable child output: {}", e.what());
    }
    if (line.empty() || (status != 0 && s.error.empty()))
      s.error = fmt::format("the child process failed (exit status {})", status);
    return s;
  }

  // HotSpot's default base (32 GiB) is where AddressSanitizer keeps its shadow memory: there the
  // "map at base" mode would always relocate. A base this process cannot take is replaced by one
  // high in the user address space (free in a fresh process of this executable as well).
  static std::uintptr_t usable_base(std::uintptr_t wish) {
    constexpr std::size_t kProbe = 1 << 20;
    for (std::uintptr_t base : {wish, std::uintptr_t{0x200000000000}}) {
      void* p = mmap(reinterpret_cast<void*>(base), kProbe, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == reinterpret_cast<void*>(base)) {
        munmap(p, kProbe);
        return base;
      }
      if (p != MAP_FAILED) munmap(p, kProbe);
    }
    return wish;
  }

  int run_parent() {
    namespace fs = std::filesystem;
    params_.base = usable_base(params_.base);
    const MachineLoad load_before = machine_load();
    fs::path dir = no_files_ ? fs::temp_directory_path() / fmt::format("metaspace-lab-startup-{}", getpid()) : fs::path(out_dir_);
    fs::create_directories(dir);
    const std::string archive = (dir / "startup.msa").string();
    if (!quiet_) std::fprintf(stderr, "startup: dumping %zu classes into %s ...\n", params_.classes, archive.c_str());
    const auto t0 = std::chrono::steady_clock::now();
    if (auto e = dump_startup_archive(params_, archive); !e.empty()) throw std::runtime_error("dump failed: " + e);
    const double dump_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const auto archive_bytes = fs::file_size(archive);

    // Repeats interleaved (all modes and thread counts once, then again), so that a burst of load
    // on the shared machine spoils one run of each rather than every run of one.
    BestTable best;
    std::vector<StartupSample> all;
    bool failed = false;
    for (unsigned rep = 0; rep < repeat_; rep++) {
      for (unsigned t : threads_) {
        for (StartupMode m : kModes) {
          if (!quiet_) std::fprintf(stderr, "startup: run %u/%u, %s, %u threads\n", rep + 1, repeat_, startup_mode_name(m), t);
          StartupSample s = in_child(m, t, archive);
          all.push_back(s);
          if (!s.error.empty()) {
            failed = true;
            std::fprintf(stderr, "startup: %s, %u threads: %s\n", startup_mode_name(m), t, s.error.c_str());
            continue;
          }
          auto it = best.find({m, t});
          if (it == best.end() || s.ready_ms < it->second.ready_ms) best[{m, t}] = s;
        }
      }
    }
    // Sharing: two processes hold the archive (or the built metadata) at once.
    std::vector<SharedStartup> shared;
    for (StartupMode m : {StartupMode::map, StartupMode::build}) {
      if (!quiet_) std::fprintf(stderr, "startup: two processes at once, %s\n", startup_mode_name(m));
      shared.push_back(run_two_startups(m, params_, archive));
      if (!shared.back().error.empty()) {
        failed = true;
        std::fprintf(stderr, "startup: two processes, %s: %s\n", startup_mode_name(m), shared.back().error.c_str());
      }
    }
    std::error_code ec;
    fs::remove(archive, ec);
    if (no_files_) fs::remove_all(dir, ec);
    const MachineLoad load_after = machine_load();
    const MachineLoad load{std::max(load_before.load, load_after.load), load_after.cores};

    // Two times per start-up: ms_create (the archive mapped, or the boot classes built: what the
    // verdict judges) and ready (ms_create plus the classes loaded after it, which cost every mode
    // the same and so shrink the ratio).
    std::vector<std::vector<std::string>> rows = {{"start-up", "threads", "ms_create (ms)", "ms_create vs build",
                                                   "ready (ms)", "ready vs build", "committed (MiB)", "RSS (MiB)",
                                                   "PSS (MiB)", "relocation"}};
    for (unsigned t : threads_) {
      const auto build = best.find({StartupMode::build, t});
      for (StartupMode m : kModes) {
        auto it = best.find({m, t});
        if (it == best.end()) {
          rows.push_back({mode_label(m), std::to_string(t), "failed", "", "", "", "", "", "", ""});
          continue;
        }
        const StartupSample& s = it->second;
        std::string relocation = "-";
        if (s.relocated)
          relocation = fmt::format("{} delta {:#x}", s.archive_relocation, s.relocation_delta);
        const bool against = build != best.end() && m != StartupMode::build;
        rows.push_back({mode_label(m), std::to_string(t), fmt::format("{:.2f}", s.create_ms),
                        against ? speed_against(build->second.create_ms, s.create_ms) : "-",
                        fmt::format("{:.2f}", s.ready_ms),
                        against ? speed_against(build->second.ready_ms, s.ready_ms) : "-", mib(s.committed),
                        mib(s.rss), mib(s.pss), relocation});
      }
    }
    std::vector<std::vector<std::string>> shared_rows = {
        {"two processes at once", "RSS each (MiB)", "PSS each (MiB)", "PSS / RSS"}};
    for (const SharedStartup& s : shared) {
      const std::string what = s.mode == StartupMode::build ? "build (private)" : "map, every page read (shared)";
      if (!s.error.empty()) {
        shared_rows.push_back({what, "failed", "", ""});
        continue;
      }
      shared_rows.push_back({what, mib(s.rss[0]) + " / " + mib(s.rss[1]), mib(s.pss[0]) + " / " + mib(s.pss[1]),
                             fmt::format("{:.2f} / {:.2f}", ratio(s.pss[0], s.rss[0]), ratio(s.pss[1], s.rss[1]))});
    }
    std::vector<std::string> verdict = judge(best, load);
    for (const SharedStartup& s : shared) {
      if (s.mode != StartupMode::map || !s.error.empty()) continue;
      const double r0 = ratio(s.pss[0], s.rss[0]), r1 = ratio(s.pss[1], s.rss[1]);
      // Memory, not time: the load does not make it inconclusive.
      const bool half = r0 >= 0.4 && r0 <= 0.6 && r1 >= 0.4 && r1 <= 0.6;
      verdict.push_back(fmt::format("{}: two processes mapping the archive: each one's PSS about half its RSS "
                                    "({:.2f} / {:.2f})", half ? "met" : "MISSED", r0, r1));
    }

    const std::string header =
        fmt::format("startup: {} classes in the archive ({:.1f} MiB, dumped in {:.0f} ms, base {:#x}), {} loaded "
                    "after, class alignment {}; best of {} start-ups, each in a fresh process; {}",
                    params_.classes, static_cast<double>(archive_bytes) / (1024.0 * 1024.0), dump_ms, params_.base,
                    params_.loaded_after, params_.class_alignment, repeat_, load.describe());
    std::printf("%s\n\nverdict:\n", header.c_str());
    for (const auto& v : verdict) std::printf("  %s\n", v.c_str());
    std::printf("\n%s\n%s", format_table(rows).c_str(), format_table(shared_rows).c_str());
    std::fflush(stdout);

    if (!no_files_) write_files(best, all, shared, rows, shared_rows, verdict, header, archive_bytes, dump_ms);
    return failed ? 1 : 0;
  }

  // The targets, judged on ms_create (the archive's part of start-up: the classes loaded
  // after it cost every mode the same); timing verdicts are inconclusive on a busy machine.
  std::vector<std::string> judge(const BestTable& best, const MachineLoad& load) const {
    std::vector<std::string> lines;
    const unsigned t = threads_.front();
    auto b = best.find({StartupMode::build, t}), m = best.find({StartupMode::map, t}), r = best.find({StartupMode::relocate, t});
    if (b == best.end() || m == best.end() || r == best.end()) return {"verdict: a mode failed, nothing judged"};
    const double build = b->second.create_ms, map = m->second.create_ms, reloc = r->second.create_ms;
    lines.push_back(load.judge(fmt::format("map at base ready in <= 5 ms ({:.2f} ms)", map), map <= 5.0));
    lines.push_back(load.judge(fmt::format("map >= 20x faster than building, ms_create alone ({:.0f}x; with the {} "
                                           "classes loaded after it, which cost both the same: {:.2f}x, the table's "
                                           "'ready vs build')",
                                           build / map, params_.loaded_after, b->second.ready_ms / m->second.ready_ms),
                               build >= 20 * map));
    lines.push_back(load.judge(fmt::format("relocation <= 10x the plain map ({:.1f}x, {})", reloc / map,
                                           r->second.archive_relocation),
                               reloc <= 10 * map));
    if (auto e = best.find({StartupMode::relocate_eager, t}); e != best.end())
      lines.push_back(fmt::format("(eager relocation: {:.1f}x the plain map)", e->second.create_ms / map));
    return lines;
  }

  // "11.21x faster" or "1.12x slower": how this start-up's time compares with building's.
  static std::string speed_against(double build_ms, double ms) {
    if (!(ms > 0) || !(build_ms > 0)) return "-";
    return build_ms >= ms ? format_ratio(build_ms / ms) + "x faster" : format_ratio(ms / build_ms) + "x slower";
  }

  static std::string format_table(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& r : rows)
      for (std::size_t i = 0; i < r.size(); i++) width[i] = std::max(width[i], r[i].size());
    std::string out;
    for (const auto& r : rows) {
      for (std::size_t i = 0; i < r.size(); i++)
        out += i == 0 ? fmt::format("{:<{}}", r[i], width[i]) : fmt::format("  {:>{}}", r[i], width[i]);
      out += '\n';
    }
    return out;
  }

  void write_files(const BestTable& best, const std::vector<StartupSample>& all, const std::vector<SharedStartup>& shared,
                   const std::vector<std::vector<std::string>>& rows,
                   const std::vector<std::vector<std::string>>& shared_rows, const std::vector<std::string>& verdict,
                   const std::string& header, std::uintmax_t archive_bytes, double dump_ms) const {
    namespace fs = std::filesystem;
    nlohmann::json j = {{"schema_version", kSchemaVersion},
                        {"scenario", "startup"},
                        {"command", command()},
                        {"params",
                         {{"classes", params_.classes},
                          {"loaded_after", params_.loaded_after},
                          {"threads", threads_},
                          {"repeat", repeat_},
                          {"class_alignment", params_.class_alignment}}},
                        {"machine", describe_machine()},
                        {"archive", {{"bytes", archive_bytes}, {"dump_ms", dump_ms}}},
                        {"best", nlohmann::json::array()},
                        {"runs", nlohmann::json::array()},
                        {"two_processes", nlohmann::json::array()},
                        {"verdict", verdict}};
    for (const auto& [key, s] : best) j["best"].push_back(s.to_json());
    for (const auto& s : all) j["runs"].push_back(s.to_json());
    for (const auto& s : shared) j["two_processes"].push_back(s.to_json());
    const fs::path dir(out_dir_);
    const std::string json_path = (dir / "startup.json").string();
    std::ofstream(json_path) << j.dump(2) << '\n';
    std::string written = json_path;
    const std::string png = (dir / "startup.png").string();
    bool have_png = false;
    if (!no_plot_) {
      const std::string problem = render_plot(json_path, png);
      if (problem.empty()) {
        have_png = true;
        written += ", " + png;
      } else {
        std::fprintf(stderr, "%s\n", problem.c_str());
      }
    }
    HtmlReport html("metaspace-lab startup");
    html.paragraph(header);
    html.preformatted(command());
    if (have_png) html.figure(png, "time to ready per mode and thread count; RSS and PSS gained by start-up");
    html.heading("Verdict");
    html.verdict(verdict);
    html.table(rows);
    html.table(shared_rows);
    const std::string html_path = (dir / "startup.html").string();
    html.write(html_path);
    written += ", " + html_path;
    std::printf("wrote %s\n", written.c_str());
  }

  std::string command() const {
    std::string c = "metaspace-lab startup";
    c += fmt::format(" --classes {} --loaded-after {} --threads {} --repeat {} --class-alignment {}", params_.classes,
                     params_.loaded_after, fmt::join(threads_, ","), repeat_, params_.class_alignment);
    return c;
  }

  CLI::App* cmd_ = nullptr;
  StartupParams params_;
  std::vector<unsigned> threads_ = {1, 2, 4};
  unsigned repeat_ = 3;
  std::string out_dir_ = "lab-out";
  bool quiet_ = false;
  bool no_plot_ = false;
  bool no_files_ = false;
  std::string child_mode_;
  std::string archive_;
};

}  // namespace

void register_startup_command() {
  register_command("startup", [] { return std::make_unique<StartupCommand>(); });
}

}  // namespace lab
