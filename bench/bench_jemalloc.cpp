// jemalloc 5 with an arena per loader ("arenas.create"), mallocx into it, and "arena.<i>.destroy",
// which discards everything the arena holds at once. Two variants:
//   jemalloc     MALLOCX_TCACHE_NONE: every request goes to the arena (under its bin lock).
//   jemalloc_tc  an explicit tcache per loader ("tcache.create"): the fast path jemalloc users
//                normally get. The thread's automatic tcache cannot be used, because it would
//                keep regions of a destroyed arena; a per-loader tcache is flushed and destroyed
//                with its loader. It cannot be shared between threads.
// Linking jemalloc replaces malloc in this process, hence an executable of its own.
#include <jemalloc/jemalloc.h>

#include <cstdlib>
#include <string>

#include "bench_common.hpp"

namespace {

using bench::LoaderShape;
using bench::Req;

void ctl(const char* name, void* out, size_t* out_len, void* in, size_t in_len) {
  if (mallctl(name, out, out_len, in, in_len) != 0) {
    std::fprintf(stderr, "mallctl %s failed\n", name);
    std::abort();
  }
}

template <bool kTcache>
struct Jemalloc {
  static constexpr const char* kName = kTcache ? "jemalloc_tc" : "jemalloc";
  static constexpr bool kShared = !kTcache;
  struct Loader {
    unsigned arena;
    unsigned tcache;
    int flags;
  };

  static void init() {}
  static Loader* create(LoaderShape) {
    auto* l = new Loader{};
    size_t len = sizeof(unsigned);
    ctl("arenas.create", &l->arena, &len, nullptr, 0);
    if constexpr (kTcache) {
      len = sizeof(unsigned);
      ctl("tcache.create", &l->tcache, &len, nullptr, 0);
      l->flags = MALLOCX_ARENA(l->arena) | MALLOCX_TCACHE(l->tcache);
    } else {
      l->flags = MALLOCX_ARENA(l->arena) | MALLOCX_TCACHE_NONE;
    }
    return l;
  }
  static void* alloc(Loader* l, Req r) {
    void* p = mallocx(r.bytes, l->flags);
    if (p == nullptr) std::abort();
    return p;
  }
  static void dealloc(Loader* l, void* p, Req r) { sdallocx(p, r.bytes, l->flags); }
  static void destroy(Loader* l) {
    if constexpr (kTcache) ctl("tcache.destroy", nullptr, nullptr, &l->tcache, sizeof(unsigned));
    std::string name = "arena." + std::to_string(l->arena) + ".destroy";
    ctl(name.c_str(), nullptr, nullptr, nullptr, 0);
    delete l;
  }
  static void trim() {
    std::string name = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
    ctl(name.c_str(), nullptr, nullptr, nullptr, 0);
  }
  static void stats() {
    uint64_t epoch = 1;
    size_t len = sizeof(epoch);
    mallctl("epoch", &epoch, &len, &epoch, len);
    size_t allocated = 0;
    len = sizeof(allocated);
    mallctl("stats.allocated", &allocated, &len, nullptr, 0);
    benchmark::DoNotOptimize(allocated);
  }
};

}  // namespace

int main(int argc, char** argv) {
  bench::register_all<Jemalloc<false>>();
  bench::register_all<Jemalloc<true>>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
