// The metaspace: the commit limiter, the two spaces and the registry of loaders. Everything a
// runtime holds a handle to hangs off one of these.
//
// Lock order (never the reverse): registry → loader → chunk manager (non-class, then class).
#pragma once

#include <metaspace/metaspace.h>

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "commit/commit_limiter.hpp"
#include "context/class_space.hpp"
#include "context/context.hpp"
#include "loader/loader_metaspace.hpp"

namespace metaspace {

// The whole state, aggregated under all locks at one instant.
struct Snapshot {
  ms_stats_t totals{};
  std::vector<LoaderStats> loaders;
};

class Metaspace {
 public:
  // Null with the error set if the settings are bad or the reservation fails.
  static std::unique_ptr<Metaspace> create(const ms_settings_t& settings);
  ~Metaspace();

  const ms_settings_t& settings() const { return settings_; }
  CommitLimiter& limiter() { return limiter_; }
  Context& context(ms_space_t space) {
    return space == MS_SPACE_CLASS ? class_space_->context() : *nonclass_;
  }
  ClassSpace& class_space() { return *class_space_; }
  const ClassSpace& class_space() const { return *class_space_; }

  LoaderMetaspace* create_loader(ms_loader_kind_t kind, unsigned flags);
  ms_error_t destroy_loader(LoaderMetaspace* loader);

  void purge();
  Snapshot snapshot();
  ms_error_t verify();

  // Owner of this object for callbacks (the C handle).
  ms_metaspace_t* handle() { return reinterpret_cast<ms_metaspace_t*>(this); }

 private:
  explicit Metaspace(const ms_settings_t& settings);

  // Dead loader objects are kept (and freed) only after this many later deaths, so that a
  // runtime using a handle after destroying it gets MS_ERR_DESTROYED rather than touching freed
  // memory, while the objects of long-dead loaders do not pile up.
  static constexpr size_t kQuarantine = 1024;

  // Loader objects live in the non-class space's bookkeeping (counted, returned when free).
  SlabAllocator& loader_slabs() { return nonclass_->bookkeeping(); }
  void free_loader_object(LoaderMetaspace* l);

  ms_settings_t settings_;
  CommitLimiter limiter_;
  std::unique_ptr<Context> nonclass_;
  std::unique_ptr<ClassSpace> class_space_;

  mutable std::mutex registry_lock_;
  LoaderMetaspace* live_ = nullptr;  // owned; doubly linked through prev_/next_
  size_t live_count_ = 0;
  size_t live_by_kind_[MS_LOADER_KIND_COUNT] = {};
  std::deque<LoaderMetaspace*> dead_;  // owned; oldest first
};

}  // namespace metaspace
