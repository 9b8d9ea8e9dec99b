#pragma once

#include <metaspace/metaspace.h>

#include <string>

#include "backend.hpp"

namespace lab {

// libmetaspace through its public C API: one metaspace per backend instance, one ms_loader per
// loader. used/committed are the library's own totals (class + non-class space).
class ElasticBackend : public Backend {
 public:
  ElasticBackend(std::string name, const ms_settings_t& settings);
  ~ElasticBackend() override;

  std::string name() const override { return name_; }
  nlohmann::json settings() const override;
  LoaderHandle create_loader(LoaderKind kind) override;
  LoaderHandle create_shared_loader(LoaderKind kind) override;
  void* allocate(LoaderHandle loader, Space space, std::size_t bytes) override;
  void deallocate(LoaderHandle loader, void* p, std::size_t bytes) override;
  void destroy_loader(LoaderHandle loader) override;
  void purge() override;
  MemoryFigures figures() override;
  std::optional<unsigned> narrow_class_bits() const override;

 private:
  std::string name_;
  ms_settings_t settings_;
  ms_metaspace_t* ms_;
};

// elastic, elastic-4k/16k/64k (commit granule), no-reclaim (reclaim none).
void register_elastic_backends();

}  // namespace lab
