#include "simulated_loader.hpp"

#include <cstring>
#include <utility>
#include <vector>

namespace lab {

SimulatedLoader::SimulatedLoader(Backend& backend, LoaderKind kind)
    : backend_(&backend), handle_(backend.create_loader(kind)) {}

SimulatedLoader::~SimulatedLoader() {
  if (!alive()) return;
  // Only reached while a scenario unwinds from an earlier error, which is the one worth reporting.
  try {
    backend_->destroy_loader(handle_);
  } catch (const BackendError&) {
  }
}

SimulatedLoader::SimulatedLoader(SimulatedLoader&& other) noexcept
    : backend_(other.backend_),
      handle_(std::exchange(other.handle_, nullptr)),
      live_bytes_(std::exchange(other.live_bytes_, 0)),
      klass_bytes_(std::exchange(other.klass_bytes_, 0)),
      classes_(std::exchange(other.classes_, 0)),
      allocations_(std::exchange(other.allocations_, 0)) {}

void* SimulatedLoader::allocate(Space space, std::size_t bytes) {
  void* p = backend_->allocate(handle_, space, bytes);
  // A runtime writes all of its metadata; without this, untouched pages would flatter RSS.
  std::memset(p, 0x5A, bytes);
  live_bytes_ += bytes;
  ++allocations_;
  return p;
}

void SimulatedLoader::load(const ClassShape& shape) {
  allocate(Space::klass, shape.klass_bytes);
  klass_bytes_ += shape.klass_bytes;
  // The class's blocks, kept only until its premature frees are done. One buffer per thread: a
  // buffer per loader would put the lab's own memory next to the allocator's (10 000 micro loaders).
  thread_local std::vector<void*> blocks;
  blocks.clear();
  for (auto bytes : shape.nonclass_bytes) blocks.push_back(allocate(Space::nonclass, bytes));
  for (auto i : shape.dealloc_indices) {
    backend_->deallocate(handle_, blocks[i], shape.nonclass_bytes[i]);
    live_bytes_ -= shape.nonclass_bytes[i];
  }
  ++classes_;
}

void SimulatedLoader::release() {
  if (!alive()) return;
  backend_->destroy_loader(std::exchange(handle_, nullptr));
  live_bytes_ = 0;
  klass_bytes_ = 0;
}

}  // namespace lab
