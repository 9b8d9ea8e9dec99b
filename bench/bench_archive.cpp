// The class-data archive against building the same metadata by allocation, each measurement in a
// fresh process (fork) so that no run sees another's pages or address space:
//
//   bench_archive [N=40000] [lookup_small=1000] [lookup_large=100000]
//
// The metadata: N classes with the workload model's sizes, from tools/common/archive_workload.hpp
// (shared with the lab's `startup` scenario): a Klass and 37 non-class blocks per class, every
// block pointing at its Klass, a narrow pointer per class, the Klasses chained.
//
//   build        ms_create, one boot loader, every block allocated and written (pointers, a
//                pattern), as a runtime would fill it (it would also parse class files: this is
//                the lower bound of building)
//   map          ms_create with the archive at its requested base, archive_verify=0 (lazy)
//   map+verify   the same with archive_verify=1 (checksum of the regions, every slot checked)
//   relocate     the requested base taken: map elsewhere and move every marked pointer, lazily
//                (archive_relocation=auto with verify=0: userfaultfd) and eagerly
//   ...+walk     then touch every Klass and its first block (what the first use costs)
// Time to ready is wall time of the call (median of the runs); RSS and PSS from /proc/self/smaps_rollup
// while two processes hold the same (map: shared pages; build: private).
// Lookups: ns per call over an array of block addresses (first 1/16 or last 1/16 of the archive),
// for archived blocks of a small and a large archive and for blocks a loader allocated.
#include <metaspace/metaspace.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "archive_workload.hpp"
#include "proc_memory.hpp"
#include "two_processes.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using archive_workload::Shape;
using archive_workload::make_shape;

ms_settings_t settings() {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_alignment_bytes = 64;
  s.archive_policy = MS_ARCHIVE_REQUIRE;
  return s;
}

// Builds the metadata by allocation from one boot loader of `ms`.
void build(ms_metaspace_t* ms, const Shape& s, std::vector<void*>* klasses) {
  archive_workload::build(ms, ms_loader_create(ms, MS_LOADER_BOOT, 0), s, 0, s.classes(), klasses);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void dump(const Shape& s, const std::string& path, uintptr_t base) {
  if (archive_workload::dump(s, s.classes(), settings(), base, path.c_str()) != MS_OK) {
    std::fprintf(stderr, "%s\n", ms_last_error_text());
    std::exit(1);
  }
}

struct Rollup {
  long rss_kib = 0, pss_kib = 0;
};
Rollup rollup() {
  return {static_cast<long>(proc_memory::kib_field("/proc/self/smaps_rollup", "Rss").value_or(0) / 1024),
          static_cast<long>(proc_memory::proportional_bytes().value_or(0) / 1024)};
}

struct Result {
  double ready_ms = 0, walk_ms = 0;
  size_t committed = 0;
  long rss_kib = 0, pss_kib = 0, base_rss_kib = 0, base_pss_kib = 0;
};

enum class Mode { kBuild, kMap, kMapVerify, kRelocate, kRelocateEager };

// One start-up in this process: build or map, then walk.
Result start_up(Mode mode, const Shape& s, const std::string& path, uintptr_t base) {
  Result r;
  Rollup before = rollup();
  r.base_rss_kib = before.rss_kib;
  r.base_pss_kib = before.pss_kib;
  void* squat = nullptr;
  if (mode == Mode::kRelocate || mode == Mode::kRelocateEager) {
    squat = mmap(reinterpret_cast<void*>(base), 1 << 20, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  }
  ms_settings_t st = settings();
  std::vector<void*> klasses;
  klasses.reserve(s.klass_bytes.size());
  auto t0 = Clock::now();
  ms_metaspace_t* ms;
  if (mode == Mode::kBuild) {
    ms = ms_create(&st);
    build(ms, s, &klasses);
  } else {
    st.archive_path = path.c_str();
    st.archive_verify = mode == Mode::kMapVerify;
    st.archive_relocation = mode == Mode::kRelocateEager ? MS_ARCHIVE_RELOCATE_EAGER : MS_ARCHIVE_RELOCATE_AUTO;
    ms = ms_create(&st);
    if (ms == nullptr) { std::fprintf(stderr, "%s\n", ms_last_error_text()); std::exit(1); }
  }
  r.ready_ms = ms_since(t0);
  // First use: every Klass and its first block.
  t0 = Clock::now();
  uintptr_t sink = 0;
  if (mode == Mode::kBuild) {
    for (void* k : klasses) sink += reinterpret_cast<uintptr_t>(*static_cast<void**>(k));
  } else {
    for (void** k = static_cast<void**>(ms_archive_root(ms, "last")); k != nullptr;
         k = static_cast<void**>(k[1])) {
      sink += reinterpret_cast<uintptr_t>(*static_cast<void**>(k[0]));
    }
  }
  r.walk_ms = ms_since(t0);
  if (sink == 42) std::printf(" ");
  ms_stats_t stats;
  ms_get_stats(ms, &stats);
  r.committed = stats.total.committed_bytes;
  Rollup after = rollup();
  r.rss_kib = after.rss_kib;
  r.pss_kib = after.pss_kib;
  ms_destroy(ms);
  if (squat != nullptr) munmap(squat, 1 << 20);
  return r;
}

// Two processes hold the same metadata at once (tools/common/two_processes.hpp): an archive with
// every page read (archive_verify=1), or the metadata built.
std::pair<two_processes::Gain, two_processes::Gain> in_two_processes(Mode mode, const Shape& s,
                                                                     const std::string& path) {
  auto gains = two_processes::measure([&]() -> std::function<void()> {
    ms_settings_t st = settings();
    ms_metaspace_t* ms;
    if (mode == Mode::kBuild) {
      ms = ms_create(&st);
      std::vector<void*> keep;
      build(ms, s, &keep);
    } else {
      st.archive_path = path.c_str();
      st.archive_verify = 1;  // every page read: the archive's whole RSS
      ms = ms_create(&st);
    }
    return [ms] { ms_destroy(ms); };
  });
  if (!gains) {
    std::fprintf(stderr, "two processes: a child failed\n");
    std::exit(1);
  }
  return *gains;
}

Result in_child(Mode mode, const Shape& s, const std::string& path, uintptr_t base) {
  int fds[2];
  if (pipe(fds)) std::exit(1);
  pid_t p = fork();
  if (p == 0) {
    Result r = start_up(mode, s, path, base);
    (void)!write(fds[1], &r, sizeof r);
    _exit(0);
  }
  Result r;
  (void)!read(fds[0], &r, sizeof r);
  waitpid(p, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  return r;
}

uintptr_t free_base() {
  void* p = mmap(nullptr, (2ull << 30) + (4u << 20), PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  uintptr_t a = (reinterpret_cast<uintptr_t>(p) + (4u << 20) - 1) & ~uintptr_t((4u << 20) - 1);
  munmap(p, (2ull << 30) + (4u << 20));
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per call of f over `ptrs`, best of 5 rounds.
template <class F>
double ns_per(const std::vector<void*>& ptrs, F f) {
  double best = 1e9;
  for (int round = 0; round < 5; round++) {
    uintptr_t sink = 0;
    auto t0 = Clock::now();
    for (int rep = 0; rep < 200; rep++) {
      for (void* p : ptrs) sink += f(p);
    }
    double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                (200.0 * static_cast<double>(ptrs.size()));
    if (sink == 42) std::printf(" ");
    best = std::min(best, ns);
  }
  return best;
}

void lookups(size_t classes, const std::string& path) {
  Shape s = make_shape(classes);
  uintptr_t base = free_base();
  dump(s, path, base);
  ms_settings_t st = settings();
  st.archive_path = path.c_str();
  ms_metaspace_t* ms = ms_create(&st);
  std::vector<void*> all;
  for (void** k = static_cast<void**>(ms_archive_root(ms, "last")); k != nullptr;
       k = static_cast<void**>(k[1])) {
    all.push_back(k);
  }
  std::reverse(all.begin(), all.end());
  size_t n = std::max<size_t>(1, std::min<size_t>(all.size() / 16, 1024));
  std::vector<void*> first(all.begin(), all.begin() + n), last(all.end() - n, all.end());
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_BOOT, 0);
  std::vector<void*> arena;
  for (size_t i = 0; i < n; i++) arena.push_back(ms_allocate(l, MS_SPACE_CLASS, 576));
  auto is_archived = [&](void* p) -> uintptr_t { return ms_is_archived(ms, p); };
  auto round_trip = [&](void* p) -> uintptr_t {
    return reinterpret_cast<uintptr_t>(ms_decode_class(ms, ms_encode_class(ms, p)));
  };
  auto is_class = [&](void* p) -> uintptr_t { return ms_is_class_space(ms, p); };
  std::printf("| %zu classes, first | %.2f | %.2f | |\n", classes, ns_per(first, is_archived),
              ns_per(first, round_trip));
  std::printf("| %zu classes, last | %.2f | %.2f | |\n", classes, ns_per(last, is_archived),
              ns_per(last, round_trip));
  std::printf("| %zu classes, loader's blocks | %.2f | %.2f | %.2f (ms_is_class_space) |\n", classes,
              ns_per(arena, is_archived), ns_per(arena, round_trip), ns_per(arena, is_class));
  ms_destroy(ms);
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 40000;
  size_t small = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1000;
  size_t large = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 100000;
  char dir[] = "/tmp/bench_archive_XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  std::string path = std::string(dir) + "/startup.msa";
  Shape s = make_shape(n);
  uintptr_t base = free_base();
  auto t0 = Clock::now();
  dump(s, path, base);
  double dump_ms = ms_since(t0);
  FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, 0, SEEK_END);
  long file_bytes = std::ftell(f);
  std::fclose(f);
  std::printf("%zu classes: archive %.1f MiB, dumped in %.0f ms\n\n", n, file_bytes / 1048576.0, dump_ms);
  std::printf("| start-up | ready (ms, median of 7) | first walk (ms) | committed (MiB) |\n|---|---|---|---|\n");
  const char* names[] = {"build by allocation", "map (lazy, verify=0)", "map + verify",
                         "relocate (base taken, verify=0; auto: lazy, userfaultfd)",
                         "relocate (base taken, verify=0, archive_relocation=eager)"};
  double ready[5];
  for (int m = 0; m < 5; m++) {
    std::vector<double> t, w;
    Result last;
    for (int rep = 0; rep < 7; rep++) {
      last = in_child(static_cast<Mode>(m), s, path, base);
      t.push_back(last.ready_ms);
      w.push_back(last.walk_ms);
    }
    ready[m] = median(t);
    std::printf("| %s | %.2f | %.2f | %.1f |\n", names[m], ready[m], median(w),
                last.committed / 1048576.0);
  }
  std::printf("\nbuild / map = %.1fx, relocate / map = %.1fx (eager %.1fx), (map+verify) / map = %.1fx\n\n",
              ready[0] / ready[1], ready[3] / ready[1], ready[4] / ready[1], ready[2] / ready[1]);
  std::printf("| two processes at once | RSS each (MiB) | PSS each (MiB) |\n|---|---|---|\n");
  for (Mode m : {Mode::kBuild, Mode::kMap}) {
    auto [a, b] = in_two_processes(m, s, path);
    std::printf("| %s | %.1f / %.1f | %.1f / %.1f |\n", m == Mode::kBuild ? "build" : "map (all pages read)",
                a.rss_bytes / 1048576.0, b.rss_bytes / 1048576.0, a.pss_bytes / 1048576.0,
                b.pss_bytes / 1048576.0);
  }
  std::printf("\n| lookups (ns per call, best of 5) | ms_is_archived | encode+decode | arena baseline |\n|---|---|---|---|\n");
  lookups(small, std::string(dir) + "/small.msa");
  lookups(large, std::string(dir) + "/large.msa");
  std::system((std::string("rm -rf ") + dir).c_str());
  return 0;
}
