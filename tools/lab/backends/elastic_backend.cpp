#include "backends/elastic_backend.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "backend_registry.hpp"

namespace lab {
namespace {

[[noreturn]] void fail(const std::string& call) {
  const ms_error_t e = ms_last_error();
  throw BackendError(fmt::format("{} failed: {} ({})", call, ms_error_name(e), ms_last_error_text()));
}

ms_loader_kind_t to_ms(LoaderKind kind) {
  switch (kind) {
    case LoaderKind::boot: return MS_LOADER_BOOT;
    case LoaderKind::micro: return MS_LOADER_MICRO;
    case LoaderKind::standard: break;
  }
  return MS_LOADER_STANDARD;
}

// What the library costs the process: its committed memory, which includes its own bookkeeping
// (chunk headers, loader objects, free-block structures: `overhead`, part of committed). The
// lab's `committed` column for the library is the chunk memory alone (committed − overhead), so
// that it compares with what the other backends commit for blocks; footprint has everything.
std::size_t library_footprint(const ms_stats_t& s) { return s.total.committed_bytes; }
std::size_t library_chunk_memory(const ms_stats_t& s) {
  return s.total.committed_bytes - s.total.overhead_bytes;
}

// The settings as the library itself reports them (its JSON report's "settings"), so the lab
// names nothing the library names already (the reclaim policy, ...).
nlohmann::json library_settings(ms_metaspace_t* ms) {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  if (!out) return nlohmann::json::object();
  const ms_error_t e = ms_write_report_json(ms, out, nullptr);
  std::fclose(out);
  nlohmann::json settings = nlohmann::json::object();
  if (e == MS_OK) settings = nlohmann::json::parse(text, text + size, nullptr, false).value("settings", settings);
  std::free(text);
  return settings.is_object() ? settings : nlohmann::json::object();
}

// Unset fields keep the library's defaults, so "elastic" is exactly what a user gets.
void register_variant(const std::string& name, std::optional<ms_reclaim_t> reclaim, std::size_t granule_bytes) {
  register_backend(name, [name, reclaim, granule_bytes](const BackendOptions& options) {
    ms_settings_t s;
    ms_settings_init(&s);
    if (reclaim) s.reclaim = *reclaim;
    if (granule_bytes) s.commit_granule_bytes = granule_bytes;
    if (options.class_alignment_bytes) s.class_alignment_bytes = options.class_alignment_bytes;
    return std::make_unique<ElasticBackend>(name, s);
  });
}

}  // namespace

ElasticBackend::ElasticBackend(std::string name, const ms_settings_t& settings)
    : name_(std::move(name)), settings_(settings), ms_(ms_create(&settings_)) {
  if (!ms_) fail("ms_create");
}

ElasticBackend::~ElasticBackend() { ms_destroy(ms_); }

nlohmann::json ElasticBackend::settings() const {
  nlohmann::json s = library_settings(ms_);
  s["library"] = fmt::format("libmetaspace {}.{}", MS_VERSION_MAJOR, MS_VERSION_MINOR);
  s["footprint"] = "committed + overhead (the library's bookkeeping outside committed)";
  return s;
}

LoaderHandle ElasticBackend::create_loader(LoaderKind kind) {
  ms_loader_t* loader = ms_loader_create(ms_, to_ms(kind), 0);
  if (!loader) fail("ms_loader_create");
  return loader;
}

LoaderHandle ElasticBackend::create_shared_loader(LoaderKind kind) {
  ms_loader_t* loader = ms_loader_create(ms_, to_ms(kind), MS_LOADER_SHARED);
  if (!loader) fail("ms_loader_create(MS_LOADER_SHARED)");
  return loader;
}

void* ElasticBackend::allocate(LoaderHandle loader, Space space, std::size_t bytes) {
  void* p = ms_allocate(static_cast<ms_loader_t*>(loader), space == Space::klass ? MS_SPACE_CLASS : MS_SPACE_NONCLASS,
                        bytes);
  if (!p) fail(fmt::format("ms_allocate({} bytes, {})", bytes, space == Space::klass ? "class" : "non-class"));
  return p;
}

void ElasticBackend::deallocate(LoaderHandle loader, void* p, std::size_t bytes) {
  if (ms_deallocate(static_cast<ms_loader_t*>(loader), p, bytes) != MS_OK)
    fail(fmt::format("ms_deallocate({} bytes)", bytes));
}

void ElasticBackend::destroy_loader(LoaderHandle loader) {
  if (ms_loader_destroy(static_cast<ms_loader_t*>(loader)) != MS_OK) fail("ms_loader_destroy");
}

void ElasticBackend::purge() { ms_purge(ms_); }

MemoryFigures ElasticBackend::figures() {
  ms_stats_t s;
  if (ms_get_stats(ms_, &s) != MS_OK) fail("ms_get_stats");
  MemoryFigures f;
  f.used = s.total.used_bytes;
  f.committed = library_chunk_memory(s);
  f.footprint = library_footprint(s);
  const auto& c = s.space[MS_SPACE_CLASS];
  const auto& n = s.space[MS_SPACE_NONCLASS];
  f.extra = {{"class_used", c.used_bytes},
             {"class_committed", c.committed_bytes},
             {"nonclass_used", n.used_bytes},
             {"nonclass_committed", n.committed_bytes},
             {"reserved", s.total.reserved_bytes},
             {"overhead", s.total.overhead_bytes},
             {"free_in_chunks", s.total.free_in_chunks_bytes},
             {"free_chunks", s.total.free_chunks_bytes},
             {"free_blocks", s.total.free_blocks_bytes},
             {"chunks_in_use", s.total.chunks_in_use},
             {"commits", s.commits},
             {"uncommits", s.uncommits}};
  return f;
}

std::optional<unsigned> ElasticBackend::narrow_class_bits() const { return ms_narrow_class_bits(ms_); }

void register_elastic_backends() {
  register_variant("elastic", std::nullopt, 0);
  register_variant("elastic-4k", std::nullopt, 4 * 1024);
  register_variant("elastic-16k", std::nullopt, 16 * 1024);
  register_variant("elastic-64k", std::nullopt, 64 * 1024);
  register_variant("no-reclaim", MS_RECLAIM_NONE, 0);
}

}  // namespace lab
