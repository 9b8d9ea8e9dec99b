// mimalloc with a heap per loader: mi_heap_destroy frees everything the loader allocated at once,
// the closest a general-purpose allocator comes to an arena per loader. Only linked into
// metaspace-lab-mimalloc, because Debian's libmimalloc replaces malloc for the whole process.
//
// mimalloc heaps belong to the thread that created them: a heap may only be allocated from and
// destroyed by that thread. The lab's scenarios create, use and destroy every loader on one
// thread (the threads scenario gives each thread its own loaders and lets each thread destroy
// them), so this holds; thread_bound_loaders() says so for any future scenario.
#include <mimalloc.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_set>

#include "backend_registry.hpp"
#include "backends/mimalloc_backend.hpp"

namespace lab {
namespace {

struct MiLoader {
  mi_heap_t* heap;
  std::atomic<std::size_t> live_bytes{0};
};

// used = bytes requested and not freed; committed = mimalloc's own committed figure
// (mi_process_info current_commit), which counts the segments it holds from the OS for the whole
// process, the lab's own heap included (2-3 MiB). Not taken relative to its value when the backend
// was created: mimalloc commits ahead, and the lab's heap shares its segments, so that difference
// stayed 0 over whole traces (footprint/live 0.00); the baseline is in extra.mimalloc_baseline.
class MimallocBackend : public Backend {
 public:
  explicit MimallocBackend(std::size_t class_alignment)
      : class_alignment_(class_alignment ? class_alignment : 8), committed_baseline_(current_commit()) {}
  ~MimallocBackend() override {
    for (MiLoader* l : std::unordered_set<MiLoader*>(loaders_)) destroy_loader(l);
  }

  std::string name() const override { return "mimalloc"; }
  nlohmann::json settings() const override {
    return {{"allocator", "mimalloc " + std::to_string(mi_version())},
            {"loader", "mi_heap_new / mi_heap_destroy"},
            {"class_alignment_bytes", class_alignment_},
            {"committed", "mi_process_info current_commit (whole process)"},
            {"purge", "mi_collect(true)"}};
  }

  LoaderHandle create_loader(LoaderKind) override {
    mi_heap_t* heap = mi_heap_new();
    if (!heap) throw BackendError("mi_heap_new failed");
    auto* l = new MiLoader{heap};
    std::lock_guard lock(mutex_);
    loaders_.insert(l);
    return l;
  }

  void* allocate(LoaderHandle loader, Space space, std::size_t bytes) override {
    auto* l = static_cast<MiLoader*>(loader);
    void* p = space == Space::klass ? mi_heap_malloc_aligned(l->heap, bytes, class_alignment_)
                                    : mi_heap_malloc(l->heap, bytes);
    if (!p) throw BackendError("mi_heap_malloc of " + std::to_string(bytes) + " bytes failed");
    l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    return p;
  }

  void deallocate(LoaderHandle loader, void* p, std::size_t bytes) override {
    auto* l = static_cast<MiLoader*>(loader);
    mi_free(p);
    l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }

  void destroy_loader(LoaderHandle loader) override {
    auto* l = static_cast<MiLoader*>(loader);
    mi_heap_destroy(l->heap);
    {
      std::lock_guard lock(mutex_);
      loaders_.erase(l);
    }
    delete l;
  }

  void purge() override { mi_collect(true); }

  MemoryFigures figures() override {
    MemoryFigures f;
    {
      std::lock_guard lock(mutex_);
      for (MiLoader* l : loaders_) f.used += l->live_bytes.load(std::memory_order_relaxed);
    }
    const std::size_t commit = current_commit();
    f.committed = commit;
    f.extra = {{"mimalloc_baseline", committed_baseline_}};
    return f;
  }

  bool thread_bound_loaders() const override { return true; }

 private:
  static std::size_t current_commit() {
    std::size_t elapsed, user, sys, rss, peak_rss, commit, peak_commit, faults;
    mi_process_info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
    return commit;
  }
  std::size_t class_alignment_;
  std::size_t committed_baseline_;
  std::mutex mutex_;
  std::unordered_set<MiLoader*> loaders_;
};

}  // namespace

void register_mimalloc_backend() {
  register_backend("mimalloc", [](const BackendOptions& o) {
    return std::make_unique<MimallocBackend>(o.class_alignment_bytes);
  });
}

}  // namespace lab
