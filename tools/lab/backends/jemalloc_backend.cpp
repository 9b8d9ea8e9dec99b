// jemalloc with an explicit arena per loader (arenas.create); allocations bypass the thread cache
// so that every block really lands in its loader's arena, and arena.<i>.destroy frees the loader's
// memory at once. Only linked into metaspace-lab-jemalloc, because Debian's jemalloc has no symbol
// prefix and replaces malloc for the whole process.
#include <jemalloc/jemalloc.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <vector>

#include "backend_registry.hpp"
#include "backends/jemalloc_backend.hpp"

namespace lab {
namespace {

// jemalloc has at most a few thousand arenas (MALLOCX_ARENA_LIMIT); loaders beyond that share the
// automatic arenas and remember their blocks to free them one by one at death (the malloc-only
// design), which the settings report.
struct JeLoader {
  std::optional<unsigned> arena;
  std::vector<void*> blocks;  // only without an own arena
  std::atomic<std::size_t> live_bytes{0};
};

std::size_t read_stat(const char* name) {
  std::size_t value = 0;
  std::size_t len = sizeof value;
  if (mallctl(name, &value, &len, nullptr, 0) != 0) throw BackendError(fmt::format("mallctl(\"{}\") failed", name));
  return value;
}

// used = bytes requested and not freed; committed = jemalloc's stats.resident (pages of its data,
// metadata and unused dirty pages that are resident: what it holds from the OS), refreshed
// through "epoch" before reading, minus its value when the backend was created (jemalloc serves
// the whole process, the lab included).
class JemallocBackend : public Backend {
 public:
  explicit JemallocBackend(std::size_t class_alignment)
      : class_alignment_(class_alignment ? class_alignment : 8), committed_baseline_(resident()) {}
  ~JemallocBackend() override {
    for (JeLoader* l : std::unordered_set<JeLoader*>(loaders_)) destroy_loader(l);
  }

  std::string name() const override { return "jemalloc"; }
  nlohmann::json settings() const override {
    const char* version = nullptr;
    std::size_t len = sizeof version;
    mallctl("version", &version, &len, nullptr, 0);
    return {{"allocator", std::string("jemalloc ") + (version ? version : "?")},
            {"loader", "arenas.create / mallocx(MALLOCX_ARENA | MALLOCX_TCACHE_NONE) / arena.<i>.destroy"},
            {"class_alignment_bytes", class_alignment_},
            {"committed", "stats.resident, minus its value when the backend was created"},
            {"purge", "arena.<all>.purge"}};
  }

  LoaderHandle create_loader(LoaderKind) override {
    auto* l = new JeLoader;
    unsigned arena = 0;
    std::size_t len = sizeof arena;
    if (mallctl("arenas.create", &arena, &len, nullptr, 0) == 0) {
      l->arena = arena;
    } else {
      shared_arena_loaders_.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard lock(mutex_);
    loaders_.insert(l);
    return l;
  }

  void* allocate(LoaderHandle loader, Space space, std::size_t bytes) override {
    auto* l = static_cast<JeLoader*>(loader);
    int flags = l->arena ? MALLOCX_ARENA(*l->arena) | MALLOCX_TCACHE_NONE : 0;
    if (space == Space::klass && class_alignment_ > 16) flags |= MALLOCX_ALIGN(class_alignment_);
    void* p = mallocx(bytes, flags);
    if (!p) throw BackendError(fmt::format("mallocx({} bytes) failed", bytes));
    if (!l->arena) l->blocks.push_back(p);
    l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    return p;
  }

  void deallocate(LoaderHandle loader, void* p, std::size_t bytes) override {
    auto* l = static_cast<JeLoader*>(loader);
    if (l->arena) {
      dallocx(p, MALLOCX_TCACHE_NONE);
    } else {
      l->blocks.erase(std::find(l->blocks.begin(), l->blocks.end(), p));
      dallocx(p, 0);
    }
    l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  }

  void destroy_loader(LoaderHandle loader) override {
    auto* l = static_cast<JeLoader*>(loader);
    if (l->arena) {
      const std::string name = fmt::format("arena.{}.destroy", *l->arena);
      if (mallctl(name.c_str(), nullptr, nullptr, nullptr, 0) != 0)
        throw BackendError(fmt::format("mallctl(\"{}\") failed", name));
    } else {
      for (void* p : l->blocks) dallocx(p, 0);
    }
    {
      std::lock_guard lock(mutex_);
      loaders_.erase(l);
    }
    delete l;
  }

  void purge() override {
    const std::string name = fmt::format("arena.{}.purge", MALLCTL_ARENAS_ALL);
    mallctl(name.c_str(), nullptr, nullptr, nullptr, 0);
  }

  MemoryFigures figures() override {
    MemoryFigures f;
    {
      std::lock_guard lock(mutex_);
      for (JeLoader* l : loaders_) f.used += l->live_bytes.load(std::memory_order_relaxed);
    }
    const std::size_t now = resident();
    f.committed = now - std::min(now, committed_baseline_);
    f.extra = {{"jemalloc_baseline", committed_baseline_},
               {"jemalloc_shared_arena_loaders", shared_arena_loaders_.load(std::memory_order_relaxed)},
               {"jemalloc_active", read_stat("stats.active")},
               {"jemalloc_mapped", read_stat("stats.mapped")},
               {"jemalloc_metadata", read_stat("stats.metadata")},
               {"jemalloc_retained", read_stat("stats.retained")}};
    return f;
  }

 private:
  static std::size_t resident() {
    std::uint64_t epoch = 1;
    std::size_t len = sizeof epoch;
    mallctl("epoch", &epoch, &len, &epoch, len);
    return read_stat("stats.resident");
  }
  std::size_t class_alignment_;
  std::size_t committed_baseline_;
  std::mutex mutex_;
  std::unordered_set<JeLoader*> loaders_;
  std::atomic<std::size_t> shared_arena_loaders_{0};
};

}  // namespace

void register_jemalloc_backend() {
  register_backend("jemalloc", [](const BackendOptions& o) {
    return std::make_unique<JemallocBackend>(o.class_alignment_bytes);
  });
}

}  // namespace lab
