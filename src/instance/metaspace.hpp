// The metaspace: the commit limiter, the two spaces, the micro pool, the class-data archive and
// the registry of loaders (LoaderRegistry), composed. Everything a runtime holds a handle to hangs
// off one of these. Its statistics are in metaspace_stats.cpp, its verification in
// metaspace_verify.cpp.
//
// Lock order (never the reverse): registry → loader → chunk manager (non-class, then class).
#pragma once

#include <metaspace/detail/loader_head.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "archive/archive_mapping.hpp"
#include "commit/commit_limiter.hpp"
#include "common/mutex.hpp"
#include "context/class_space.hpp"
#include "context/context.hpp"
#include "instance/loader_registry.hpp"
#include "loader/loader_metaspace.hpp"
#include "loader/micro_pool.hpp"

namespace metaspace {

// Totals (exact accounting identity, from the space counters at one instant) and, if asked
// for, every live loader's statistics (each exact for its loader, at the moment it was visited).
// Where one space's overhead lies, read with its totals (the parts add up to the space's
// overhead_bytes): the node ranges (commit masks, chunk start slots, node map), the loaders'
// arenas inside their first chunks, the space's slabs (chunk headers, arenas, free-block
// structures, dead handles, ...) by size class, and in the non-class space the loader objects'.
struct BookkeepingUsage {
  size_t node_bytes = 0;
  size_t arenas_in_chunks_bytes = 0;
  SlabAllocator::Usage slabs{};
  SlabAllocator::Usage loader_objects{};  // empty in the class space
  size_t bytes() const {
    return node_bytes + arenas_in_chunks_bytes + slabs.committed_bytes() +
           loader_objects.committed_bytes();
  }
};

struct Snapshot {
  ms_stats_t totals{};
  std::vector<LoaderStats> loaders;
  BookkeepingUsage bookkeeping[2];  // indexed by ms_space_t
};

struct SnapshotOptions {
  bool loaders = true;  // false: totals only; memory independent of the number of loaders
};

class Metaspace {
 public:
  // Null with the error set if the settings are bad or the reservation fails.
  static std::unique_ptr<Metaspace> create(const ms_settings_t& settings);
  ~Metaspace();
  // Never at an address a metaspace of this process had (os/unique_addresses): a stale handle
  // never names a newer metaspace.
  static void* operator new(size_t bytes);
  static void operator delete(void* p, size_t bytes) noexcept;

  const ms_settings_t& settings() const { return settings_; }
  CommitLimiter& limiter() { return limiter_; }
  Context& context(ms_space_t space) {
    return space == MS_SPACE_CLASS ? class_space_->context() : *nonclass_;
  }
  ClassSpace& class_space() { return *class_space_; }
  const ClassSpace& class_space() const { return *class_space_; }
  // Whether p lies in a node of the non-class space (lock-free, see VirtualSpaceList).
  bool nonclass_contains(const void* p) const {
    return nonclass_->vslist().node_containing(p) != nullptr;
  }
  MicroPool& micro_pool() { return *micro_pool_; }
  // The class-data archive, or null (none asked for, or left out: archive_status says why).
  archive::ArchiveMapping* archive() { return archive_.get(); }
  const archive::ArchiveMapping* archive() const { return archive_.get(); }
  // ms_is_archived: one subtraction and compare on this object, no load of the mapping (the
  // runtime asks per Klass). Through archive() it cost 1.20-1.31x ms_is_class_space; an empty
  // range (no archive) answers false without a branch of its own.
  bool in_archive(const void* p) const {
    return reinterpret_cast<uintptr_t>(p) - archive_lo_ < archive_bytes_;
  }
  // MS_OK, or why the archive asked for was left out (the sentence in *reason).
  ms_error_t archive_status(const char** reason) const {
    if (reason != nullptr) *reason = archive_reason_.c_str();
    return archive_error_;
  }

  // The loaders and their handles: create, destroy, refuse (loader_registry.hpp).
  LoaderRegistry& loaders() { return *loaders_; }
  // Whether p lies where this metaspace keeps loader objects (live_metaspaces.hpp). Lock-free.
  bool holds_loader_address(const void* p) const { return loader_objects_->in_range(p); }
  // The statistics of the live loader `handle`, safe against its concurrent destruction
  // (LoaderRegistry::lock_live). MS_ERR_DESTROYED / MS_ERR_INVALID_ARGUMENT as
  // LoaderRegistry::refuse.
  ms_error_t loader_stats(uintptr_t handle, LoaderStats* out);

  void purge();
  // Never holds more than one loader lock at a time (see metaspace_stats.cpp).
  Snapshot snapshot(const SnapshotOptions& options = {});
  // O(1), no loader lock.
  void usage(ms_usage_t* out) const;
  ms_error_t verify();

  // fork (docs/threads.md, "fork"), while no thread is inside the library (os/fork_gate.hpp):
  // sets the exclusion flag of every live loader's published bins (OwnerExclusion, no barrier
  // yet) and appends them to `excluded`.
  void exclude_owners_for_fork(std::vector<ms__free_bins*>& excluded);

  // Owner of this object for callbacks (the C handle).
  ms_metaspace_t* handle() { return reinterpret_cast<ms_metaspace_t*>(this); }

 private:
  explicit Metaspace(const ms_settings_t& settings);
  // Brings the counters up to date, skipping loaders that are busy (never waits for one).
  void fold_all_loaders();
  // The totals of every space from its counters, under both chunk managers' locks.
  void space_totals(ms_stats_t& t, BookkeepingUsage bookkeeping[2]);

  // The space's bookkeeping outside chunks: its context's, and for the non-class space the
  // loader objects. O(1), lock-free.
  size_t outside_overhead_bytes(ms_space_t space) const {
    const Context& c = space == MS_SPACE_CLASS ? class_space_->context() : *nonclass_;
    return c.overhead_bytes() + (space == MS_SPACE_NONCLASS ? loader_objects_->committed_bytes() : 0);
  }
  // Maps settings_.archive_path and sets *class_wish right above it. A refusal is recorded for
  // archive_status; false only if the policy is MS_ARCHIVE_REQUIRE (error recorded).
  bool map_archive(uintptr_t* class_wish);
  // Records why the archive is left out; false (and archive_refused_) under MS_ARCHIVE_REQUIRE.
  bool leave_out_archive();

  ms_settings_t settings_;
  CommitLimiter limiter_;
  std::unique_ptr<Context> nonclass_;
  // Loader objects have slabs of their own (LoaderRegistry), counted as the non-class space's
  // overhead and returned when free like the rest of its bookkeeping.
  std::unique_ptr<SlabAllocator> loader_objects_;
  std::unique_ptr<ClassSpace> class_space_;
  std::unique_ptr<MicroPool> micro_pool_;
  std::unique_ptr<LoaderEnvironment> loader_env_;  // what every loader refers to
  // The class-data archive (after the class space in destruction: its range lies right below).
  std::string archive_path_;
  std::unique_ptr<archive::ArchiveMapping> archive_;
  uintptr_t archive_lo_ = 0;   // archive_'s range once it is kept, for in_archive()
  size_t archive_bytes_ = 0;
  ms_error_t archive_error_ = MS_OK;
  std::string archive_reason_;
  bool archive_refused_ = false;

  std::unique_ptr<LoaderRegistry> loaders_;  // after everything its loaders use
};

}  // namespace metaspace
