#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lab {

enum class LoaderKind { boot, standard, micro };

// The names of the kinds in traces and flags ("boot", "standard", "micro"), both ways.
inline const char* loader_kind_name(LoaderKind kind) {
  switch (kind) {
    case LoaderKind::boot: return "boot";
    case LoaderKind::standard: return "standard";
    case LoaderKind::micro: return "micro";
  }
  return "standard";
}
inline std::optional<LoaderKind> loader_kind_from_name(std::string_view name) {
  for (LoaderKind k : {LoaderKind::boot, LoaderKind::standard, LoaderKind::micro})
    if (name == loader_kind_name(k)) return k;
  return std::nullopt;
}
enum class Space { nonclass, klass };

// What a backend reports at a sample point. used/committed are the allocator's own figures
// (see each backend for what they mean); footprint is what the allocator costs the process in
// memory: committed plus any bookkeeping the allocator keeps outside it (the verdicts judge
// footprint/live); rss/mappings are the process's, filled in by the recorder.
struct MemoryFigures {
  std::size_t used = 0;
  std::size_t committed = 0;
  std::size_t footprint = 0;
  nlohmann::json extra = nlohmann::json::object();
};

// Settings a scenario may override per run (one-loader runs each class alignment).
struct BackendOptions {
  std::size_t class_alignment_bytes = 0;  // 0: the backend's default
};

// Raised for any allocator failure; the message says which call failed and why.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using LoaderHandle = void*;

// One allocator family behind the interface a runtime's class loaders would need. Calls on one
// loader are serialized by the caller (as a runtime's loader lock does); different loaders may be
// used from different threads at once, and thread_bound_loaders() says whether a loader must stay
// on the thread that created it.
class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual nlohmann::json settings() const = 0;

  virtual LoaderHandle create_loader(LoaderKind kind) = 0;
  // A loader that many threads may call at once (a parallel-capable class loader), or null if the
  // allocator has no such thing: the caller then serializes the calls with a lock of its own, as
  // a runtime's loader lock would. Destroyed with destroy_loader.
  virtual LoaderHandle create_shared_loader(LoaderKind) { return nullptr; }
  virtual void* allocate(LoaderHandle loader, Space space, std::size_t bytes) = 0;
  virtual void deallocate(LoaderHandle loader, void* p, std::size_t bytes) = 0;
  virtual void destroy_loader(LoaderHandle loader) = 0;
  // Gives free memory back to the OS the way the allocator offers (called after unloading).
  virtual void purge() = 0;
  virtual MemoryFigures figures() = 0;

  // Bits a compressed class pointer needs, where the backend can encode them at all.
  virtual std::optional<unsigned> narrow_class_bits() const { return std::nullopt; }
  virtual bool thread_bound_loaders() const { return false; }
};

}  // namespace lab
