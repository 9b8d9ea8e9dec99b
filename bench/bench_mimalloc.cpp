// mimalloc 2 with a heap per loader: mi_heap_malloc, mi_free, and mi_heap_destroy, which frees
// everything the heap allocated at once (mimalloc's own equivalent of a loader dying). Linking
// mimalloc replaces malloc in this process, hence an executable of its own.
#include <mimalloc.h>

#include <cstdlib>

#include "bench_common.hpp"

namespace {

using bench::LoaderShape;
using bench::Req;

struct Mimalloc {
  static constexpr const char* kName = "mimalloc";
  // A mimalloc heap belongs to the thread that created it: another thread may free into it but
  // not allocate from it, so a loader shared by two threads has no mimalloc equivalent.
  static constexpr bool kShared = false;
  using Loader = mi_heap_t;

  static void init() {}
  static Loader* create(LoaderShape) {
    mi_heap_t* h = mi_heap_new();
    if (h == nullptr) std::abort();
    return h;
  }
  static void* alloc(Loader* h, Req r) {
    void* p = mi_heap_malloc(h, r.bytes);
    if (p == nullptr) std::abort();
    return p;
  }
  static void dealloc(Loader*, void* p, Req) { mi_free(p); }
  static void destroy(Loader* h) { mi_heap_destroy(h); }
  static void trim() { mi_collect(true); }
  static void stats() {
    size_t rss = 0, peak_rss = 0, commit = 0, peak_commit = 0, faults = 0;
    mi_process_info(nullptr, nullptr, nullptr, &rss, &peak_rss, &commit, &peak_commit, &faults);
    benchmark::DoNotOptimize(commit);
  }
};

}  // namespace

int main(int argc, char** argv) {
  bench::register_all<Mimalloc>();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
