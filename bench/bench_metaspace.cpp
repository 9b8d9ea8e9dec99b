// libmetaspace and the glibc baseline a runtime would otherwise write: malloc with a two-word
// header per block linking it into its loader's list, freed one by one when the loader dies.
// Both live in this executable because neither replaces malloc; mimalloc and jemalloc do, so they
// get executables of their own.
#include <malloc.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "bench_common.hpp"

namespace {

using bench::LoaderShape;
using bench::Req;

struct Metaspace {
  static constexpr const char* kName = "metaspace";
  static constexpr bool kShared = true;
  using Loader = ms_loader_t;
  static inline ms_metaspace_t* ms = nullptr;

  static void init() {
    if (ms != nullptr) return;
    ms = ms_create(nullptr);
    if (ms == nullptr) {
      std::fprintf(stderr, "ms_create: %s\n", ms_last_error_text());
      std::exit(1);
    }
  }
  static Loader* create(LoaderShape shape) {
    Loader* l = ms_loader_create(
        ms, shape == LoaderShape::kMicro ? MS_LOADER_MICRO : MS_LOADER_STANDARD,
        shape == LoaderShape::kShared ? MS_LOADER_SHARED : 0u);
    if (l == nullptr) fatal("ms_loader_create");
    return l;
  }
  static void* alloc(Loader* l, Req r) {
    void* p = ms_allocate(l, static_cast<ms_space_t>(r.space), r.bytes);
    if (p == nullptr) fatal("ms_allocate");
    return p;
  }
  static void dealloc(Loader* l, void* p, Req r) {
    if (ms_deallocate(l, p, r.bytes) != MS_OK) fatal("ms_deallocate");
  }
  static void destroy(Loader* l) { ms_loader_destroy(l); }
  static void trim() { ms_purge(ms); }
  static void stats() {
    ms_stats_t s;
    ms_get_stats(ms, &s);
    benchmark::DoNotOptimize(s);
  }
  static size_t chunks(Loader* l) {
    ms_loader_stats_t s;
    ms_loader_get_stats(l, &s);
    return s.chunks[0] + s.chunks[1];
  }
  [[noreturn]] static void fatal(const char* what) {
    std::fprintf(stderr, "%s: %s\n", what, ms_last_error_text());
    std::exit(1);
  }
};

// The inline fast path of metaspace.h with the per-block counter store it had before the counter
// left it (`allocs`, now `spare`, which the library ignores on loaders that bump),
// and nothing else changed (the handle check and the fit_max check stay): the difference to
// "metaspace" is what that counter cost per allocation. Reads the header's private window
// layout, which is fine for a measurement that lives next to the library; the library ignores
// the field it writes.
struct MetaspaceCounted : Metaspace {
  static constexpr const char* kName = "metaspace_counted";
  static void* alloc(Loader* l, Req r) {
    ms__loader_head* head = ms__head_of(l);  // the handle carries a tag (metaspace.h)
    if (MS__LIKELY(l != nullptr && r.space <= 1u &&
                   __atomic_load_n(&head->cookie, __ATOMIC_RELAXED) ==
                       (reinterpret_cast<uintptr_t>(l) ^ ms__handle_secret))) {
      size_t n = (r.bytes + 7u) & ~size_t{7};
      if (MS__LIKELY(n > __atomic_load_n(&head->fit_max[r.space], __ATOMIC_RELAXED))) {
        ms__bump* b = &head->bump[r.space];
        char* top = __atomic_load_n(&b->top, __ATOMIC_RELAXED);
        char* end = __atomic_load_n(&b->end, __ATOMIC_RELAXED);
        if (MS__LIKELY(n <= static_cast<size_t>(end - top))) {
          __atomic_store_n(&b->top, top + n, __ATOMIC_RELAXED);
          __atomic_store_n(&b->spare, b->spare + 1u, __ATOMIC_RELAXED);
          return top;
        }
      }
    }
    void* p = ms_allocate_slow(l, static_cast<ms_space_t>(r.space), r.bytes);
    if (p == nullptr) fatal("ms_allocate_slow");
    return p;
  }
};


// Every loader created MS_LOADER_SHARED, used by one thread: what a shared loader costs per block
// without contention (warm memory, CPU time, like the `metaspace` rows). The thread rows show it
// under contention.
struct MetaspaceShared : Metaspace {
  static constexpr const char* kName = "metaspace_shared";
  static Loader* create(LoaderShape shape) {
    Loader* l = ms_loader_create(
        ms, shape == LoaderShape::kMicro ? MS_LOADER_MICRO : MS_LOADER_STANDARD, MS_LOADER_SHARED);
    if (l == nullptr) fatal("ms_loader_create");
    return l;
  }
};
// glibc malloc with the per-block header list.
struct Glibc {
  static constexpr const char* kName = "glibc";
  static constexpr bool kShared = true;
  struct Header {
    Header* prev;
    Header* next;
  };
  struct Loader {
    Header head{&head, &head};
    bool shared = false;
    std::mutex lock;  // taken only for shared loaders, as a runtime would
  };

  static void init() {
    // Freed memory stays with the process unless trim() asks for it back, so "warm" runs are
    // warm for glibc as for the others (the default threshold would give back heap tops).
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  static Loader* create(LoaderShape shape) {
    auto* l = new Loader;
    l->shared = shape == LoaderShape::kShared;
    return l;
  }
  static void* alloc(Loader* l, Req r) {
    auto* h = static_cast<Header*>(std::malloc(sizeof(Header) + r.bytes));
    if (h == nullptr) std::abort();
    if (l->shared) {
      std::lock_guard<std::mutex> guard(l->lock);
      link(l, h);
    } else {
      link(l, h);
    }
    return h + 1;
  }
  static void link(Loader* l, Header* h) {
    h->prev = &l->head;
    h->next = l->head.next;
    l->head.next->prev = h;
    l->head.next = h;
  }
  static void dealloc(Loader* l, void* p, Req) {
    Header* h = static_cast<Header*>(p) - 1;
    if (l->shared) l->lock.lock();
    h->prev->next = h->next;
    h->next->prev = h->prev;
    if (l->shared) l->lock.unlock();
    std::free(h);
  }
  static void destroy(Loader* l) {
    for (Header* h = l->head.next; h != &l->head;) {
      Header* next = h->next;
      std::free(h);
      h = next;
    }
    delete l;
  }
  static void trim() { malloc_trim(0); }
  static void stats() {
    struct mallinfo2 mi = mallinfo2();
    benchmark::DoNotOptimize(mi);
  }
};

// glibc on a clean heap. The warm-up (32 MiB of the size mix allocated and freed twice) leaves
// glibc's heap aged: its freed chunks sit scattered in the unsorted and small bins, and every
// small request then searches and splits them (the `glibc` rows). One unrelated large request
// (larger than any small bin) makes glibc consolidate its free chunks into the top chunk, after
// which small requests are carved off the top, as on a fresh heap. Both states are real: a
// runtime's heap is aged by everything else it does, and may or may not be consolidated.
struct GlibcClean : Glibc {
  static constexpr const char* kName = "glibc_clean";
  static void after_warm_up() {
    void* p = std::malloc(64 * 1024);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
};

}  // namespace

// Why the size mix is slower than fixed sizes: replays the mix into 4 MiB loaders, as bm_alloc
// does, and classifies every request by what the inline path finds, in its order: a parked window
// (fast path off), no room before the window's end (end of the committed part of the chunk, or of
// the chunk), or a free block that could hold it (fit_max: reuse goes first). Percent per space.
void bm_slow_path_share(benchmark::State& state) {
  const std::vector<Req>& reqs = bench::mix_requests();
  double n[2] = {}, parked[2] = {}, no_room[2] = {}, fits_free[2] = {};
  for (auto _ : state) {
    ms_loader_t* l = Metaspace::create(LoaderShape::kStandard);
    size_t used = 0;
    for (size_t i = 0; used < bench::kLoaderBytes; i++) {
      const Req& r = reqs[i % bench::kReqs];
      const ms__loader_head* head = ms__head_of(l);  // the handle carries a tag (metaspace.h)
      const ms__bump& b = head->bump[r.space];
      size_t bytes = (r.bytes + 7u) & ~size_t{7};
      n[r.space]++;
      if (b.top == nullptr) {
        parked[r.space]++;
      } else if (bytes > static_cast<size_t>(b.end - b.top)) {
        no_room[r.space]++;
      } else if (bytes <= head->fit_max[r.space]) {
        fits_free[r.space]++;
      }
      bench::touch(Metaspace::alloc(l, r), i);
      used += r.bytes;
    }
    Metaspace::destroy(l);
  }
  const char* space[2] = {"nonclass", "class"};
  for (int s = 0; s < 2; s++) {
    auto pct = [&](double x) { return n[s] > 0 ? 100 * x / n[s] : 0; };
    state.counters[std::string(space[s]) + "_blocks"] = n[s];
    state.counters[std::string(space[s]) + "_parked_pct"] = pct(parked[s]);
    state.counters[std::string(space[s]) + "_no_room_pct"] = pct(no_room[s]);
    state.counters[std::string(space[s]) + "_fits_free_pct"] = pct(fits_free[s]);
  }
  state.counters["slow_per_kblock"] =
      1000 * (parked[0] + parked[1] + no_room[0] + no_room[1] + fits_free[0] + fits_free[1]) /
      (n[0] + n[1]);
}

// ---- Per-call costs at scale: nothing may grow with the age of a chunk or with the
// number of loaders. ----

// Deallocation by chunk age: one standard loader of 1 GiB (64 KiB blocks, never written, so the
// memory is committed but costs no RSS; the loader ends with ~4 000 chunks of 256 KiB), with
// batches of 64-byte blocks allocated before the filler (in its oldest chunks) and after it (in
// its newest). Each iteration frees one batch of the chosen age; the two rows side by side show
// whether finding a block's chunk depends on where the chunk is in the loader's list.
void bm_dealloc_by_age(benchmark::State& state, bool oldest) {
  constexpr size_t kBatches = 16;
  constexpr size_t kBlock = 64;
  constexpr size_t kFiller = 64 * 1024;
  constexpr size_t kLoaderBytes = size_t{1} << 30;
  ms_loader_t* l = Metaspace::create(LoaderShape::kStandard);
  auto batch = [&] {
    std::vector<void*> v(kBatches * bench::kBatch);
    for (size_t k = 0; k < v.size(); k++) {
      v[k] = Metaspace::alloc(l, Req{kBlock, 0});
      bench::touch(v[k], k);
    }
    return v;
  };
  std::vector<void*> old_blocks = batch();
  for (size_t used = 0; used < kLoaderBytes; used += kFiller) Metaspace::alloc(l, Req{kFiller, 0});
  std::vector<void*> new_blocks = batch();
  std::vector<void*>& blocks = oldest ? old_blocks : new_blocks;
  ms_loader_stats_t ls;
  ms_loader_get_stats(l, &ls);
  size_t b = 0;
  for (auto _ : state) {
    if (b == kBatches) {
      state.SkipWithError("dealloc_by_age: out of blocks (raise kBatches)");
      break;
    }
    double t0 = bench::now_seconds();
    for (size_t k = 0; k < bench::kBatch; k++) {
      if (ms_deallocate(l, blocks[b * bench::kBatch + k], kBlock) != MS_OK) {
        Metaspace::fatal("ms_deallocate");
      }
    }
    state.SetIterationTime(bench::now_seconds() - t0);
    b++;
  }
  state.counters["loader_chunks"] = static_cast<double>(ls.chunks[0] + ls.chunks[1]);
  Metaspace::destroy(l);
  bench::Tally().finish(state, bench::kBatch);
}

// A population of live micro loaders (one Klass-sized class block and one small non-class block
// each, the hidden-class pattern), kept across the benchmarks that need the same count so that the
// 1 M-loader rows build it once. Resized (destroying or creating loaders) on demand.
std::vector<ms_loader_t*>& micro_population(size_t n) {
  static std::vector<ms_loader_t*> live;
  while (live.size() > n) {
    Metaspace::destroy(live.back());
    live.pop_back();
  }
  while (live.size() < n) {
    ms_loader_t* l = Metaspace::create(LoaderShape::kMicro);
    bench::touch(Metaspace::alloc(l, Req{528, 1}), live.size());
    bench::touch(Metaspace::alloc(l, Req{48, 0}), live.size());
    live.push_back(l);
  }
  return live;
}

// One ms_get_stats with `loaders` live micro loaders; also the peak RSS one call adds.
void bm_stats_micro(benchmark::State& state, size_t loaders) {
  micro_population(loaders);
  double peak_extra = -1;
  for (auto _ : state) {
    bool peak = proc_memory::reset_peak_resident();
    size_t before = proc_memory::resident_bytes();
    Metaspace::stats();
    if (peak) {
      double extra = (static_cast<double>(proc_memory::peak_resident_bytes()) -
                      static_cast<double>(before)) / 1024;
      peak_extra = std::max(peak_extra, extra);
    }
  }
  state.counters["peak_rss_extra_KiB"] = peak_extra;
  state.counters["loaders"] = static_cast<double>(loaders);
}

// One ms_get_usage with `loaders` live micro loaders: counters only, so the figure must not move
// with the loader count.
void bm_usage_micro(benchmark::State& state, size_t loaders) {
  micro_population(loaders);
  for (auto _ : state) {
    ms_usage_t u;
    u.size = sizeof u;
    ms_get_usage(Metaspace::ms, &u);
    benchmark::DoNotOptimize(u);
  }
  state.counters["loaders"] = static_cast<double>(loaders);
}

// ms_purge with `loaders` live micro loaders and nothing to return: what purge costs by itself.
void bm_purge_micro(benchmark::State& state, size_t loaders) {
  micro_population(loaders);
  for (auto _ : state) ms_purge(Metaspace::ms);
  state.counters["loaders"] = static_cast<double>(loaders);
}

// ms_purge right after `loaders` micro loaders died: it returns their memory, and should cost in
// proportion to that memory (the counter says how much RSS came back), not to the loader count.
void bm_purge_after_death(benchmark::State& state, size_t loaders) {
  double returned = 0;
  for (auto _ : state) {
    state.PauseTiming();
    micro_population(loaders);
    micro_population(0);
    size_t before = proc_memory::resident_bytes();
    state.ResumeTiming();
    ms_purge(Metaspace::ms);
    state.PauseTiming();
    size_t after = proc_memory::resident_bytes();
    returned += before > after ? static_cast<double>(before - after) : 0;
    state.ResumeTiming();
  }
  state.counters["returned_MiB"] =
      returned / static_cast<double>(state.iterations()) / (1 << 20);
  state.counters["loaders"] = static_cast<double>(loaders);
}

void register_scale_benchmarks() {
  benchmark::RegisterBenchmark("metaspace/dealloc_by_age/oldest", bm_dealloc_by_age, true)
      ->UseManualTime()->Iterations(16)->Repetitions(1);
  benchmark::RegisterBenchmark("metaspace/dealloc_by_age/newest", bm_dealloc_by_age, false)
      ->UseManualTime()->Iterations(16)->Repetitions(1);
  for (size_t n : {size_t{10000}, size_t{1000000}}) {
    std::string loaders = std::to_string(n) + "_micro_loaders";
    benchmark::RegisterBenchmark(("metaspace/usage/" + loaders).c_str(), bm_usage_micro, n)
        ->Repetitions(1);
    benchmark::RegisterBenchmark(("metaspace/stats/" + loaders).c_str(), bm_stats_micro, n)
        ->Iterations(n > 10000 ? 3 : 100)->Repetitions(1)->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("metaspace/purge/" + loaders).c_str(), bm_purge_micro, n)
        ->Iterations(n > 10000 ? 3 : 100)->Repetitions(1)->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("metaspace/purge_after_death/1000000_micro_loaders",
                               bm_purge_after_death, size_t{1000000})
      ->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);
  // Gives the population back before anything else runs (benchmarks run in registration order
  // within one filter pass; this row only frees).
  benchmark::RegisterBenchmark("metaspace/scale_teardown", [](benchmark::State& state) {
    for (auto _ : state) micro_population(0);
  })->Iterations(1)->Repetitions(1);
}

// What a runtime's call site compiles to; make_benchmarks_md.py disassembles these two and counts
// the instructions of the fast path (up to the first return). Variable size, and a constant
// size as at most call sites (sizeof of the metadata type).
extern "C" __attribute__((noinline, used)) void* ms_bench_probe_allocate(ms_loader_t* l,
                                                                         size_t bytes) {
  return ms_allocate(l, MS_SPACE_NONCLASS, bytes);
}

extern "C" __attribute__((noinline, used)) void* ms_bench_probe_allocate_88(ms_loader_t* l) {
  return ms_allocate(l, MS_SPACE_NONCLASS, 88);
}

int main(int argc, char** argv) {
  bench::register_all<Metaspace>();
  register_scale_benchmarks();
  bench::register_all<Glibc>();
  // Only the rows where the heap state matters: small fixed sizes and the mix.
  for (size_t bytes : {8, 16, 32, 64}) {
    benchmark::RegisterBenchmark(("glibc_clean/alloc/" + std::to_string(bytes)).c_str(),
                                 bench::bm_alloc<GlibcClean>, bench::fixed_requests(bytes))
        ->UseManualTime();
  }
  benchmark::RegisterBenchmark("glibc_clean/alloc/mix", bench::bm_alloc<GlibcClean>,
                               bench::mix_requests())->UseManualTime();
  benchmark::RegisterBenchmark("metaspace_shared/alloc/16", bench::bm_alloc<MetaspaceShared>,
                               bench::fixed_requests(16))->UseManualTime();
  benchmark::RegisterBenchmark("metaspace_shared/alloc/mix", bench::bm_alloc<MetaspaceShared>,
                               bench::mix_requests())->UseManualTime();
  benchmark::RegisterBenchmark("metaspace_shared/free", bench::bm_free_reuse<MetaspaceShared>,
                               false)->UseManualTime()->Iterations(300);
  benchmark::RegisterBenchmark("metaspace_shared/reuse", bench::bm_free_reuse<MetaspaceShared>,
                               true)->UseManualTime()->Iterations(300);
  // Only the rows where the counter could matter.
  MetaspaceCounted::init();
  benchmark::RegisterBenchmark("metaspace_counted/alloc/16", bench::bm_alloc<MetaspaceCounted>,
                               bench::fixed_requests(16))->UseManualTime();
  benchmark::RegisterBenchmark("metaspace_counted/alloc/mix", bench::bm_alloc<MetaspaceCounted>,
                               bench::mix_requests())->UseManualTime();
  for (size_t bytes : {8, 64}) {
    benchmark::RegisterBenchmark(("metaspace_counted/alloc/" + std::to_string(bytes)).c_str(),
                                 bench::bm_alloc<MetaspaceCounted>, bench::fixed_requests(bytes))
        ->UseManualTime();
  }
  benchmark::RegisterBenchmark("metaspace/slow_path_share/mix", bm_slow_path_share)
      ->Iterations(4)->Repetitions(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
