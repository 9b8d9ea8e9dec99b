#include "backend_registry.hpp"

#include <map>

namespace lab {
namespace {

std::map<std::string, BackendFactory>& factories() {
  static std::map<std::string, BackendFactory> map;
  return map;
}

}  // namespace

const std::vector<BackendEntry>& backend_catalog() {
  static const std::vector<BackendEntry> catalog = {
      {"elastic", "metaspace-lab", "libmetaspace, default settings"},
      {"elastic-4k", "metaspace-lab", "libmetaspace, 4 KiB commit granules"},
      {"elastic-16k", "metaspace-lab", "libmetaspace, 16 KiB commit granules"},
      {"elastic-64k", "metaspace-lab", "libmetaspace, 64 KiB commit granules"},
      {"no-reclaim", "metaspace-lab",
       "libmetaspace, reclaim none: free chunks stay committed and are reused, nothing is uncommitted before "
       "ms_destroy (not a model of any HotSpot: HotSpot 14 also unmapped wholly free nodes)"},
      {"malloc", "metaspace-lab", "glibc malloc per block, loader list, freed at loader death"},
      {"malloc-trim", "metaspace-lab", "as malloc, plus malloc_trim(0) after unloading"},
      {"mimalloc", "metaspace-lab-mimalloc", "mimalloc, one mi_heap per loader, destroyed with it"},
      {"jemalloc", "metaspace-lab-jemalloc", "jemalloc, one arena per loader, destroyed with it"},
  };
  return catalog;
}

std::optional<BackendEntry> find_backend_entry(const std::string& name) {
  for (const auto& e : backend_catalog())
    if (e.name == name) return e;
  return std::nullopt;
}

void register_backend(const std::string& name, BackendFactory factory) { factories()[name] = std::move(factory); }

BackendFactory find_backend_factory(const std::string& name) {
  auto it = factories().find(name);
  return it == factories().end() ? BackendFactory{} : it->second;
}

std::vector<std::string> registered_backends() {
  std::vector<std::string> out;
  for (const auto& e : backend_catalog())
    if (factories().count(e.name)) out.push_back(e.name);
  return out;
}

}  // namespace lab
