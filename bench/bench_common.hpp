// The benchmarks every backend runs, written once against a small backend interface so that
// libmetaspace and its competitors execute exactly the same request sequences:
//
//   struct Backend {
//     static constexpr const char* kName;      // row prefix in the JSON ("metaspace", "glibc", ...)
//     static constexpr bool kShared;           // can one loader serve two threads at once?
//     struct Loader;
//     static void init();                      // once per process, before any benchmark
//     static Loader* create(LoaderShape);      // a loader (heap, arena, list head)
//     static void* alloc(Loader*, Req);
//     static void dealloc(Loader*, void*, Req);
//     static void destroy(Loader*);            // everything the loader allocated dies at once
//     static void trim();                      // give freed memory back to the kernel (uncommit)
//     static void stats();                     // one statistics snapshot of the whole allocator
//   };
//
// Every allocated block gets its first word written: a runtime initializes what it allocates, and
// the write is what makes fresh memory fault in, so "cold" runs see the page faults a real
// process would. Fault counts are reported per 1 000 blocks next to every timing.
//
// Timed regions use manual timing around the measured loop, so that loader creation, destruction
// and warm-up between batches cost nothing in the figures of operations that do not include them.
// The clock is the thread's CPU time: the machine is shared (2 cores, other builds running), and
// wall time would charge preemption to whatever was being measured. Page faults are kernel time
// of the faulting thread, so they are in it. Reading this clock is a system call (~0.2 µs); a
// batch of 4 096 blocks makes that < 0.1 ns per block.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "proc_memory.hpp"

namespace bench {

// One request: size in bytes and space (0 non-class, 1 class); competitors ignore the space.
struct Req {
  uint32_t bytes;
  uint32_t space;
};

enum class LoaderShape { kStandard, kMicro, kShared };

constexpr size_t kWord = 8;
constexpr size_t kReqs = size_t{1} << 16;  // pre-generated requests; indexed modulo this
constexpr size_t kBatch = 4096;            // blocks per timed batch
constexpr size_t kLoaderBytes = 4u << 20;  // a warm loader is replaced after this much

// The size mix of docs/workload-model.md (generated-classes workload): one class-space Klass
// (66–100 words) per ≈ 38 allocations; the non-class rest is 38 % ≤ 8 words, 45 % 9–16 words,
// 8 % 17–40 words, the remainder > 40 words (constant pools and the like, 41–130 words). Mean
// ≈ 17 words. Seeded, so every backend and every run sees the same sequence.
inline const std::vector<Req>& mix_requests() {
  static const std::vector<Req> reqs = [] {
    std::mt19937_64 rng(387);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    auto words = [&](unsigned lo, unsigned hi) {
      return std::uniform_int_distribution<unsigned>(lo, hi)(rng);
    };
    std::vector<Req> v(kReqs);
    for (Req& r : v) {
      double x = u(rng);
      if (x < 1.0 / 38) {
        r = {static_cast<uint32_t>(words(66, 100) * kWord), 1};
        continue;
      }
      double y = u(rng);
      unsigned w = y < 0.38 ? words(1, 8) : y < 0.83 ? words(9, 16) : y < 0.91 ? words(17, 40)
                                                                           : words(41, 130);
      r = {static_cast<uint32_t>(w * kWord), 0};
    }
    return v;
  }();
  return reqs;
}

inline std::vector<Req> fixed_requests(size_t bytes) {
  return std::vector<Req>(kReqs, Req{static_cast<uint32_t>(bytes), 0});
}

inline double now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

inline long minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

inline void touch(void* p, size_t i) { *static_cast<volatile uint64_t*>(p) = i; }

// Per-benchmark bookkeeping of what the table needs besides time: blocks per iteration (to turn
// time per iteration into time per block) and, where counted, page faults.
struct Tally {
  long faults = 0;
  bool counted = false;
  void count_faults(long n) {
    faults += n;
    counted = true;
  }
  void finish(benchmark::State& state, double blocks_per_iteration) {
    state.counters["blocks_per_iter"] =
        benchmark::Counter(blocks_per_iteration, benchmark::Counter::kAvgThreads);
    if (!counted) return;
    double all = blocks_per_iteration * static_cast<double>(state.iterations());
    state.counters["faults_per_kblock"] =
        benchmark::Counter(all > 0 ? 1000.0 * static_cast<double>(faults) / all : 0,
                           benchmark::Counter::kAvgThreads);
  }
};

// The timed loops, kept out of line so that a profiler can be told to look at them alone
// (valgrind --tool=callgrind --toggle-collect='*alloc_batch*'); one call per batch costs nothing.
// Returns the bytes requested. Without `kTouch` the blocks are not written: the allocator's own
// cost, without the cache miss a runtime pays when it initializes a block (which allocators that
// keep free lists in the blocks pay inside malloc instead).
template <class B, bool kTouch = true>
[[gnu::noinline]] size_t alloc_batch(typename B::Loader* l, const Req* reqs, size_t first,
                                     size_t n) {
  size_t bytes = 0;
  for (size_t k = 0; k < n; k++) {
    const Req& r = reqs[(first + k) % kReqs];
    void* p = B::alloc(l, r);
    if constexpr (kTouch) {
      touch(p, k);
    } else {
      benchmark::DoNotOptimize(p);
    }
    bytes += r.bytes;
  }
  return bytes;
}

template <class B>
[[gnu::noinline]] void free_batch(typename B::Loader* l, void* const* ptrs, const Req* reqs,
                                  size_t first, size_t n) {
  for (size_t k = 0; k < n; k++) B::dealloc(l, ptrs[k], reqs[(first + k) % kReqs]);
}

template <class B>
[[gnu::noinline]] void destroy_batch(typename B::Loader* const* loaders, size_t n) {
  for (size_t k = 0; k < n; k++) B::destroy(loaders[k]);
}

// Allocates and frees a loader's worth of blocks a few times so that the memory the timed loops
// get is already faulted in (for allocators that keep freed memory, which all do by default).
template <class B>
void warm_up() {
  const std::vector<Req>& reqs = mix_requests();
  for (int round = 0; round < 2; round++) {
    typename B::Loader* l = B::create(LoaderShape::kStandard);
    size_t used = 0;
    for (size_t i = 0; used < 8 * kLoaderBytes; i++) {
      const Req& r = reqs[i % kReqs];
      touch(B::alloc(l, r), i);
      used += r.bytes;
    }
    B::destroy(l);
  }
  // A backend may leave its heap in another state afterwards (glibc_clean: consolidated).
  if constexpr (requires { B::after_warm_up(); }) B::after_warm_up();
}

// Allocation throughput into a long-lived loader (replaced, untimed, every 4 MiB): the steady
// state of a loader that loads classes. Warm: memory was faulted in by warm_up.
template <class B, bool kTouch = true>
void bm_alloc(benchmark::State& state, std::vector<Req> reqs) {
  warm_up<B>();
  Tally t;
  typename B::Loader* l = B::create(LoaderShape::kStandard);
  size_t used = 0, i = 0;
  for (auto _ : state) {
    if (used > kLoaderBytes) {
      B::destroy(l);
      l = B::create(LoaderShape::kStandard);
      used = 0;
    }
    long f0 = minor_faults();
    double t0 = now_seconds();
    used += alloc_batch<B, kTouch>(l, reqs.data(), i, kBatch);
    double t1 = now_seconds();
    t.count_faults(minor_faults() - f0);
    state.SetIterationTime(t1 - t0);
    i += kBatch;
  }
  B::destroy(l);
  t.finish(state, kBatch);
}

// The same on fresh memory, with the first-touch page faults of a process that is loading
// classes for the first time: every batch goes to a new loader and no loader dies until the end,
// so no allocator can hand out memory it got back. scripts/bench.sh runs each of these in a
// process of its own, so that nothing freed by earlier benchmarks is there to reuse either.
// (Asking the allocators to return memory between batches is no substitute: malloc_trim and
// mi_collect leave much of it mapped, so their "cold" batches would not fault.)
constexpr size_t kColdBatches = 64;

template <class B>
void bm_alloc_cold(benchmark::State& state, std::vector<Req> reqs) {
  Tally t;
  std::vector<typename B::Loader*> loaders;
  size_t i = 0;
  for (auto _ : state) {
    loaders.push_back(B::create(LoaderShape::kStandard));
    long f0 = minor_faults();
    double t0 = now_seconds();
    alloc_batch<B>(loaders.back(), reqs.data(), i, kBatch);
    double t1 = now_seconds();
    t.count_faults(minor_faults() - f0);
    state.SetIterationTime(t1 - t0);
    i += kBatch;
  }
  for (auto* l : loaders) B::destroy(l);
  t.finish(state, kBatch);
}

// Premature deallocation and reuse: a loader allocates a batch, frees all of it (timed as
// "free"), then allocates the same sizes again, served from the freed blocks (timed as "reuse").
template <class B>
void bm_free_reuse(benchmark::State& state, bool time_reuse) {
  const std::vector<Req>& reqs = mix_requests();
  warm_up<B>();
  Tally t;
  std::vector<void*> ptrs(kBatch);
  size_t i = 0;
  for (auto _ : state) {
    typename B::Loader* l = B::create(LoaderShape::kStandard);
    for (size_t k = 0; k < kBatch; k++) {
      ptrs[k] = B::alloc(l, reqs[(i + k) % kReqs]);
      touch(ptrs[k], k);
    }
    double t0 = now_seconds();
    free_batch<B>(l, ptrs.data(), reqs.data(), i, kBatch);
    double t1 = now_seconds();
    long f0 = minor_faults();
    alloc_batch<B>(l, reqs.data(), i, kBatch);
    double t2 = now_seconds();
    t.count_faults(minor_faults() - f0);
    state.SetIterationTime(time_reuse ? t2 - t1 : t1 - t0);
    B::destroy(l);
    i += kBatch;
  }
  t.finish(state, kBatch);
}

// Chunk turnover: 64 KiB requests into micro loaders, whose non-class chunks double from 1 KiB up
// to 64 KiB and stay there (src/arena/growth_policy.hpp), so every request needs a new chunk
// from the chunk manager (buddy split, commit bookkeeping, retiring the previous chunk) and none
// can double in place. Competitors get the same requests. (Until micro loaders' chunks grew, the
// row took 2 KiB requests, each a 2 KiB chunk.)
template <class B>
void bm_chunk_turnover(benchmark::State& state) {
  constexpr size_t kBlocks = 256;
  const std::vector<Req> reqs = fixed_requests(64 * 1024);
  warm_up<B>();
  Tally t;
  for (auto _ : state) {
    typename B::Loader* l = B::create(LoaderShape::kMicro);
    double t0 = now_seconds();
    alloc_batch<B>(l, reqs.data(), 0, kBlocks);
    double t1 = now_seconds();
    state.SetIterationTime(t1 - t0);
    if constexpr (requires { B::chunks(l); }) {
      if (B::chunks(l) != kBlocks) {
        state.SkipWithError("chunk turnover: not one chunk per request");
        B::destroy(l);
        break;
      }
    }
    B::destroy(l);
  }
  t.finish(state, kBlocks);
}

// Loader creation + destruction, nothing allocated.
template <class B>
void bm_loader_empty(benchmark::State& state) {
  Tally t;
  for (auto _ : state) {
    typename B::Loader* l = B::create(LoaderShape::kStandard);
    benchmark::DoNotOptimize(l);
    B::destroy(l);
  }
  t.finish(state, 1);
}

// A loader's whole life with 1 000 blocks of the mix: create, allocate, destroy.
template <class B>
void bm_loader_1000(benchmark::State& state) {
  const std::vector<Req>& reqs = mix_requests();
  warm_up<B>();
  Tally t;
  size_t i = 0;
  for (auto _ : state) {
    typename B::Loader* l = B::create(LoaderShape::kStandard);
    for (size_t k = 0; k < 1000; k++) touch(B::alloc(l, reqs[(i + k) % kReqs]), k);
    B::destroy(l);
    i += 1000;
  }
  t.finish(state, 1);
}

// Destruction alone of loaders holding 1 000 blocks each (timed per loader).
template <class B>
void bm_destroy_1000(benchmark::State& state) {
  constexpr size_t kLoaders = 32;
  const std::vector<Req>& reqs = mix_requests();
  warm_up<B>();
  Tally t;
  std::vector<typename B::Loader*> loaders(kLoaders);
  size_t i = 0;
  for (auto _ : state) {
    for (auto& l : loaders) {
      l = B::create(LoaderShape::kStandard);
      for (size_t k = 0; k < 1000; k++) touch(B::alloc(l, reqs[(i + k) % kReqs]), k);
      i += 1000;
    }
    double t0 = now_seconds();
    destroy_batch<B>(loaders.data(), kLoaders);
    state.SetIterationTime(now_seconds() - t0);
  }
  t.finish(state, kLoaders);
}

// Uncommit speed: ~300 MiB of loaders (300 loaders of 1 MiB, every block touched) die, and the
// allocator returns the memory to the kernel. Timed: all destructions plus the trim. Reported:
// RSS actually returned and MiB per ms.
template <class B>
void bm_uncommit(benchmark::State& state) {
  constexpr size_t kLoaders = 300;
  const std::vector<Req>& reqs = mix_requests();
  std::vector<typename B::Loader*> loaders(kLoaders);
  double returned = 0, seconds = 0;
  size_t i = 0;
  for (auto _ : state) {
    for (auto& l : loaders) {
      l = B::create(LoaderShape::kStandard);
      for (size_t used = 0; used < (1u << 20); i++) {
        const Req& r = reqs[i % kReqs];
        touch(B::alloc(l, r), i);
        used += r.bytes;
      }
    }
    size_t before = proc_memory::resident_bytes();
    double t0 = now_seconds();
    for (auto* l : loaders) B::destroy(l);
    B::trim();
    double dt = now_seconds() - t0;
    size_t after = proc_memory::resident_bytes();
    state.SetIterationTime(dt);
    returned += before > after ? static_cast<double>(before - after) : 0;
    seconds += dt;
  }
  double mib = returned / static_cast<double>(state.iterations()) / (1 << 20);
  state.counters["returned_MiB"] = mib;
  state.counters["MiB_per_ms"] =
      seconds > 0 ? returned / (1 << 20) / (seconds * 1000) : 0;
  Tally().finish(state, 1);
}

// One statistics snapshot of the whole allocator with `loaders` live loaders of 100 blocks each.
template <class B>
void bm_stats(benchmark::State& state, size_t loaders) {
  const std::vector<Req>& reqs = mix_requests();
  std::vector<typename B::Loader*> live(loaders);
  for (size_t n = 0; n < loaders; n++) {
    live[n] = B::create(LoaderShape::kStandard);
    for (size_t k = 0; k < 100; k++) touch(B::alloc(live[n], reqs[(n * 100 + k) % kReqs]), k);
  }
  for (auto _ : state) B::stats();
  for (auto* l : live) B::destroy(l);
  Tally().finish(state, 1);
}

// Threads: each with its own loader, or all on one loader created shared. A fixed number of
// batches per thread keeps the memory bounded (the shared loader cannot be replaced mid-run).
// Time is wall time; per block it is wall time / blocks of all threads (aggregate throughput).
template <class B>
struct SharedSlot {
  static inline typename B::Loader* loader = nullptr;
};

template <class B>
void bm_threads(benchmark::State& state, bool shared) {
  const std::vector<Req>& reqs = mix_requests();
  if (state.thread_index() == 0) {
    warm_up<B>();
    if (shared) SharedSlot<B>::loader = B::create(LoaderShape::kShared);
  }
  typename B::Loader* own = shared ? nullptr : B::create(LoaderShape::kStandard);
  Tally t;
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  long f0 = minor_faults();
  for (auto _ : state) {
    typename B::Loader* l = shared ? SharedSlot<B>::loader : own;
    for (size_t k = 0; k < kBatch; k++) touch(B::alloc(l, reqs[(i + k) % kReqs]), k);
    i += kBatch;
  }
  t.count_faults(minor_faults() - f0);
  if (own != nullptr) B::destroy(own);
  if (shared && state.thread_index() == 0) {
    B::destroy(SharedSlot<B>::loader);
    SharedSlot<B>::loader = nullptr;
  }
  t.finish(state, kBatch);
}

// Registers every benchmark for backend B. Names are "<backend>/<operation>", which is what
// make_benchmarks_md.py joins on across the executables.
template <class B>
void register_all() {
  B::init();
  auto name = [](const std::string& op) { return std::string(B::kName) + "/" + op; };
  for (size_t bytes : {8, 16, 32, 64}) {
    benchmark::RegisterBenchmark(name("alloc/" + std::to_string(bytes)).c_str(), bm_alloc<B>,
                                 fixed_requests(bytes))->UseManualTime();
  }
  benchmark::RegisterBenchmark(name("alloc/mix").c_str(), bm_alloc<B>, mix_requests())
      ->UseManualTime();
  benchmark::RegisterBenchmark(name("alloc_notouch/16").c_str(), bm_alloc<B, false>,
                               fixed_requests(16))->UseManualTime();
  benchmark::RegisterBenchmark(name("alloc_notouch/mix").c_str(), bm_alloc<B, false>,
                               mix_requests())->UseManualTime();
  benchmark::RegisterBenchmark(name("alloc_cold/16").c_str(), bm_alloc_cold<B>,
                               fixed_requests(16))->UseManualTime()->Iterations(kColdBatches);
  benchmark::RegisterBenchmark(name("alloc_cold/mix").c_str(), bm_alloc_cold<B>, mix_requests())
      ->UseManualTime()->Iterations(kColdBatches);
  // Fixed counts where the untimed setup of an iteration outweighs its timed part, or the default
  // iteration search would spend most of `make bench` on setup.
  benchmark::RegisterBenchmark(name("free").c_str(), bm_free_reuse<B>, false)
      ->UseManualTime()->Iterations(300);
  benchmark::RegisterBenchmark(name("reuse").c_str(), bm_free_reuse<B>, true)
      ->UseManualTime()->Iterations(300);
  benchmark::RegisterBenchmark(name("chunk_turnover").c_str(), bm_chunk_turnover<B>)
      ->UseManualTime()->Iterations(1000);
  benchmark::RegisterBenchmark(name("loader_empty").c_str(), bm_loader_empty<B>);
  benchmark::RegisterBenchmark(name("loader_1000").c_str(), bm_loader_1000<B>);
  benchmark::RegisterBenchmark(name("destroy_1000").c_str(), bm_destroy_1000<B>)
      ->UseManualTime()->Iterations(50);
  benchmark::RegisterBenchmark(name("uncommit_300MiB").c_str(), bm_uncommit<B>)
      ->UseManualTime()->Iterations(3)->Repetitions(1)->Unit(benchmark::kMillisecond);
  for (size_t n : {10, 1000}) {
    benchmark::RegisterBenchmark(name("stats/" + std::to_string(n) + "_loaders").c_str(),
                                 bm_stats<B>, n);
  }
  benchmark::RegisterBenchmark(name("threads_own/mix").c_str(), bm_threads<B>, false)
      ->Threads(1)->Threads(2)->Iterations(200)->UseRealTime();
  if constexpr (B::kShared) {
    // 4 threads oversubscribe a 2-core machine: the row shows what contention costs.
    benchmark::RegisterBenchmark(name("threads_shared/mix").c_str(), bm_threads<B>, true)
        ->Threads(1)->Threads(2)->Threads(4)->Iterations(200)->UseRealTime();
  }
}

}  // namespace bench
