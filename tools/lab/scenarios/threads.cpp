#include "scenarios/threads.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "output/units.hpp"
#include "simulated_loader.hpp"

namespace lab {
namespace {

// One thread's share: its own loaders, each with its own workload stream (seeded by the loader's
// global index), so the classes loaded do not depend on the thread count.
struct Worker {
  std::vector<std::size_t> loader_indices;
  std::vector<SimulatedLoader> loaders;
  std::exception_ptr error;

  std::size_t live_bytes() const {
    std::size_t sum = 0;
    for (const auto& l : loaders) sum += l.live_bytes();
    return sum;
  }
};

// One thread's share in the shared mode: class streams (seeded by the loader index the own mode
// would give them, so both modes load the same classes), all into the one shared loader.
struct SharedWorker {
  std::vector<std::size_t> streams;
  std::size_t live = 0;
  std::size_t allocations = 0;
  std::exception_ptr error;
};

// The loader every thread calls: natively shared, or behind one lock (a runtime's loader lock).
struct SharedLoader {
  Backend* backend = nullptr;
  LoaderHandle handle = nullptr;
  std::mutex* lock = nullptr;  // null: the backend's own shared loader

  void* allocate(Space space, std::size_t bytes) {
    if (lock == nullptr) return backend->allocate(handle, space, bytes);
    std::lock_guard guard(*lock);
    return backend->allocate(handle, space, bytes);
  }
  void deallocate(void* p, std::size_t bytes) {
    if (lock == nullptr) return backend->deallocate(handle, p, bytes);
    std::lock_guard guard(*lock);
    backend->deallocate(handle, p, bytes);
  }
};

// What SimulatedLoader::load does, into the shared loader: every byte written, the premature
// frees done.
void load_shared(SharedLoader& loader, SharedWorker& w, const ClassShape& shape) {
  std::memset(loader.allocate(Space::klass, shape.klass_bytes), 0x5A, shape.klass_bytes);
  w.live += shape.klass_bytes;
  thread_local std::vector<void*> blocks;
  blocks.clear();
  for (auto bytes : shape.nonclass_bytes) {
    void* p = loader.allocate(Space::nonclass, bytes);
    std::memset(p, 0x5A, bytes);
    blocks.push_back(p);
    w.live += bytes;
  }
  for (auto i : shape.dealloc_indices) {
    loader.deallocate(blocks[i], shape.nonclass_bytes[i]);
    w.live -= shape.nonclass_bytes[i];
  }
  w.allocations += 1 + shape.nonclass_bytes.size();
}

constexpr const char* kLoadPhase[2] = {"load", "load_shared"};
constexpr const char* kUnloadPhase[2] = {"unload", "unload_shared"};

// The best (fastest) of the repeated load samples of a thread count in one mode.
const Sample* loaded_sample(const BackendRun& run, std::size_t threads, bool shared = false) {
  const Sample* best = nullptr;
  for (const auto& s : run.samples)
    if (s.phase == kLoadPhase[shared] && s.step == static_cast<int>(threads) &&
        (!best || s.elapsed_ns < best->elapsed_ns))
      best = &s;
  return best;
}

double throughput(const Sample& s) {
  return s.extra.value("classes", 0.0) / seconds(s.elapsed_ns);
}

}  // namespace

void ThreadsScenario::add_flags(ParamSet& params) {
  params.add("--classes", classes, "classes loaded in all (split over the threads)");
  params.add("--classes-per-loader", classes_per_loader, "classes per loader");
  params.add("--threads", thread_counts, "thread counts to measure, comma separated");
  params.add("--loader-kind", loader_kind, "boot, standard or micro");
  params.add("--repeat", repeat, "measure each thread count this many times; the best counts", {.max = 100});
  params.add("--mode", mode, "own (loaders per thread), shared (one loader for all threads) or both");
}

void ThreadsScenario::validate() const {
  if (classes == 0) throw std::invalid_argument("--classes must be at least 1");
  if (classes_per_loader == 0) throw std::invalid_argument("--classes-per-loader must be at least 1");
  if (repeat == 0) throw std::invalid_argument("--repeat must be at least 1");
  if (thread_counts.empty()) throw std::invalid_argument("--threads needs at least one thread count");
  for (auto t : thread_counts)
    if (t == 0 || t > 1024) throw std::invalid_argument("--threads: thread counts must be between 1 and 1024");
  parse_loader_kind(loader_kind);
  if (mode != "own" && mode != "shared" && mode != "both")
    throw std::invalid_argument("--mode must be own, shared or both");
}

void ThreadsScenario::run(ScenarioContext& ctx) const {
  const bool own = mode != "shared";
  const bool shared = mode != "own";
  ctx.progress.set_total(thread_counts.size() * repeat * ((own ? 1 : 0) + (shared ? 1 : 0)));
  if (own) run_own(ctx);
  if (shared) run_shared(ctx);
}

void ThreadsScenario::run_shared(ScenarioContext& ctx) const {
  const LoaderKind kind = parse_loader_kind(loader_kind);
  const std::size_t stream_count = (classes + classes_per_loader - 1) / classes_per_loader;
  for (std::size_t round = 0; round < repeat * thread_counts.size(); ++round) {
    const std::size_t threads = thread_counts[round % thread_counts.size()];
    auto backend = ctx.make_backend(ctx.options);
    if (backend->thread_bound_loaders()) {  // a loader may not leave its thread: no shared mode
      ctx.progress.advance();
      continue;
    }
    std::mutex runtime_lock;
    SharedLoader loader{backend.get(), backend->create_shared_loader(kind), nullptr};
    if (loader.handle == nullptr) {
      loader.handle = backend->create_loader(kind);
      loader.lock = &runtime_lock;
    }
    std::vector<SharedWorker> workers(threads);
    for (std::size_t i = 0; i < stream_count; ++i) workers[i % threads].streams.push_back(i);
    std::barrier sync(static_cast<std::ptrdiff_t>(threads + 1));
    auto work = [&](SharedWorker& w) {
      try {
        ClassShape shape;
        for (std::size_t index : w.streams) {
          Workload workload(ctx.workload, index + 1);
          const std::size_t n = std::min(classes_per_loader, classes - index * classes_per_loader);
          for (std::size_t c = 0; c < n; ++c) {
            workload.next_class(shape);
            load_shared(loader, w, shape);
          }
        }
      } catch (...) {
        w.error = std::current_exception();
      }
      sync.arrive_and_wait();
    };
    ctx.recorder.restart_clock();
    std::vector<std::thread> pool;
    for (auto& w : workers) pool.emplace_back(work, std::ref(w));
    sync.arrive_and_wait();
    std::size_t live = 0, allocations = 0;
    bool failed = false;
    for (const auto& w : workers) {
      live += w.live;
      allocations += w.allocations;
      failed |= static_cast<bool>(w.error);
    }
    if (!failed) {
      ctx.recorder.sample(*backend, kLoadPhase[1], static_cast<int>(threads), live,
                          {{"threads", threads},
                           {"mode", "shared"},
                           {"classes", classes},
                           {"allocations", allocations},
                           {"repeat", round / thread_counts.size()}});
    }
    // The loader dies after every thread's last call (the join): the documented contract.
    for (auto& t : pool) t.join();
    backend->destroy_loader(loader.handle);
    for (const auto& w : workers)
      if (w.error) std::rethrow_exception(w.error);
    backend->purge();
    if (round + thread_counts.size() >= repeat * thread_counts.size())
      ctx.recorder.sample(*backend, kUnloadPhase[1], static_cast<int>(threads), 0,
                          {{"threads", threads}, {"mode", "shared"}});
    ctx.progress.advance();
  }
}

void ThreadsScenario::run_own(ScenarioContext& ctx) const {
  const LoaderKind kind = parse_loader_kind(loader_kind);
  const std::size_t loader_count = (classes + classes_per_loader - 1) / classes_per_loader;
  for (std::size_t round = 0; round < repeat * thread_counts.size(); ++round) {
    const std::size_t threads = thread_counts[round % thread_counts.size()];  // interleaved: 1, 2, 1, 2, ...
    auto backend = ctx.make_backend(ctx.options);
    std::vector<Worker> workers(threads);
    for (std::size_t i = 0; i < loader_count; ++i) workers[i % threads].loader_indices.push_back(i);

    // Loaders are created, used and destroyed on their own thread (mimalloc heaps require it);
    // the main thread samples while every worker waits between loading and destroying.
    std::barrier sync(static_cast<std::ptrdiff_t>(threads + 1));
    auto work = [&](Worker& w) {
      try {
        ClassShape shape;
        w.loaders.reserve(w.loader_indices.size());
        for (std::size_t index : w.loader_indices) {
          w.loaders.emplace_back(*backend, kind);
          Workload workload(ctx.workload, index + 1);
          const std::size_t n = std::min(classes_per_loader, classes - index * classes_per_loader);
          for (std::size_t c = 0; c < n; ++c) {
            workload.next_class(shape);
            w.loaders.back().load(shape);
          }
        }
      } catch (...) {
        w.error = std::current_exception();
      }
      sync.arrive_and_wait();
      sync.arrive_and_wait();
      try {
        for (auto& l : w.loaders) l.release();
      } catch (...) {
        if (!w.error) w.error = std::current_exception();
      }
    };

    ctx.recorder.restart_clock();
    std::vector<std::thread> pool;
    for (auto& w : workers) pool.emplace_back(work, std::ref(w));
    sync.arrive_and_wait();
    std::size_t live = 0, allocations = 0;
    for (const auto& w : workers) {
      live += w.live_bytes();
      for (const auto& l : w.loaders) allocations += l.allocations();
    }
    bool failed = false;
    for (const auto& w : workers) failed |= static_cast<bool>(w.error);
    if (!failed) {
      ctx.recorder.sample(*backend, kLoadPhase[0], static_cast<int>(threads), live,
                          {{"threads", threads},
                           {"mode", "own"},
                           {"classes", classes},
                           {"allocations", allocations},
                           {"repeat", round / thread_counts.size()}});
    }
    sync.arrive_and_wait();
    for (auto& t : pool) t.join();
    for (const auto& w : workers)
      if (w.error) std::rethrow_exception(w.error);
    backend->purge();
    if (round + thread_counts.size() >= repeat * thread_counts.size())  // the last round of this count
      ctx.recorder.sample(*backend, kUnloadPhase[0], static_cast<int>(threads), 0,
                          {{"threads", threads}, {"mode", "own"}});
    ctx.progress.advance();
  }
}

std::string ThreadsScenario::summary(const RunResult& result) const {
  const MachineLoad after = machine_load();
  std::string out = fmt::format("{} classes; best of {} runs per thread count; {} before the run ({:.2f} after "
                                "it, its own threads included); thread counts above {} oversubscribe the "
                                "cores: those rows show contention, not parallel speed-up\n",
                                classes, repeat, load_before.describe(), after.load, load_before.cores);
  out += fmt::format("{:<14} {:<7} {:>8} {:>10} {:>14} {:>16} {:>10}\n", "backend", "mode", "threads", "time s",
                     "classes/s", "allocations/s", "speed-up");
  for (const auto& run : result.backends) {
    for (bool shared : {false, true}) {
      const Sample* base = loaded_sample(run, 1, shared);
      for (std::size_t threads : thread_counts) {
        const Sample* best = loaded_sample(run, threads, shared);
        if (!best) continue;
        const Sample& s = *best;
        out += fmt::format("{:<14} {:<7} {:>8} {:>10.3f} {:>14.0f} {:>16.0f} {:>10}\n", run.name,
                           shared ? "shared" : "own", s.step, seconds(s.elapsed_ns), throughput(s),
                           s.extra.value("allocations", 0.0) / seconds(s.elapsed_ns),
                           base ? format_ratio(throughput(s) / throughput(*base)) : std::string("-"));
      }
    }
  }
  return out;
}

std::vector<std::string> ThreadsScenario::verdict(const RunResult& result) const {
  std::vector<std::string> lines;
  const MachineLoad& load = load_before;
  for (const auto& run : result.backends) {
    for (bool shared : {false, true}) {
      const Sample* one = loaded_sample(run, 1, shared);
      const Sample* two = loaded_sample(run, 2, shared);
      if (!one || !two) continue;
      const double speedup = throughput(*two) / throughput(*one);
      // The targets: own loaders >= 1.8x, one shared loader >= 1.6x, on a quiet machine.
      const double target = shared ? 1.6 : 1.8;
      std::string goal;
      if (run.name == "elastic")
        goal = load.busy() ? fmt::format(" (goal >= {:.1f}: inconclusive, {}: busier than its cores)", target,
                                         load.describe())
                           : speedup >= target ? fmt::format(" (goal >= {:.1f}: met)", target)
                                               : fmt::format(" (goal >= {:.1f}: MISSED)", target);
      lines.push_back(fmt::format("{} ({}): 2 threads give {:.2f}x the throughput of 1 (best of {}){}", run.name,
                                  shared ? "one shared loader" : "own loaders", speedup, repeat, goal));
    }
  }
  lines.push_back(fmt::format("timings taken at {} before the run (the other processes' load; {:.2f} after it, "
                              "the run's own threads included)",
                              load.describe(), machine_load().load));
  return lines;
}

}  // namespace lab
