#pragma once

#include <cstddef>

#include "backend.hpp"
#include "workload.hpp"

namespace lab {

// A class loader as the runtime drives it: loads classes into its metaspace (touching every byte,
// as a runtime initializes its metadata, so RSS is real), frees the rare premature blocks, and dies
// with all its memory at once. Keeps the lab's own count of live bytes, independent of the backend.
class SimulatedLoader {
 public:
  SimulatedLoader(Backend& backend, LoaderKind kind);
  ~SimulatedLoader();
  SimulatedLoader(SimulatedLoader&& other) noexcept;
  SimulatedLoader& operator=(SimulatedLoader&&) = delete;
  SimulatedLoader(const SimulatedLoader&) = delete;
  SimulatedLoader& operator=(const SimulatedLoader&) = delete;

  void load(const ClassShape& shape);
  void release();

  bool alive() const { return handle_ != nullptr; }
  std::size_t live_bytes() const { return live_bytes_; }
  std::size_t classes() const { return classes_; }
  std::size_t allocations() const { return allocations_; }
  std::size_t klass_bytes() const { return klass_bytes_; }

 private:
  void* allocate(Space space, std::size_t bytes);

  Backend* backend_;
  LoaderHandle handle_;
  std::size_t live_bytes_ = 0;
  std::size_t klass_bytes_ = 0;
  std::size_t classes_ = 0;
  std::size_t allocations_ = 0;
};

}  // namespace lab
