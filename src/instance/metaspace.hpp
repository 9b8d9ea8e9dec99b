// The metaspace: the commit limiter, the two spaces and the registry of loaders. Everything a
// runtime holds a handle to hangs off one of these.
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
#include "instance/dead_handles.hpp"
#include "instance/loader_object_queue.hpp"
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

  // The loader's handle is l->handle(): its tag is chosen so that it is none of the handles
  // that died last (dead_handles.hpp).
  LoaderMetaspace* create_loader(ms_loader_kind_t kind, unsigned flags);
  // The object goes back at once; its handle joins the dead handles.
  ms_error_t destroy_loader(LoaderMetaspace* loader);
  // Whether p lies where this metaspace keeps loader objects (live_metaspaces.hpp). Lock-free.
  bool holds_loader_address(const void* p) const { return loader_objects_->in_range(p); }
  // A handle whose object does not carry it: MS_ERR_DESTROYED (recorded) if it is one of the
  // dead handles remembered, else MS_ERR_INVALID_ARGUMENT.
  ms_error_t refuse_handle(uintptr_t handle);
  // The statistics of the live loader `handle`, safe against its concurrent destruction: the
  // handle is checked and the loader locked under the registry lock, which destruction takes.
  // MS_ERR_DESTROYED / MS_ERR_INVALID_ARGUMENT as refuse_handle.
  ms_error_t loader_stats(uintptr_t handle, LoaderStats* out);

  void purge();
  // Never holds more than one loader lock at a time (see metaspace.cpp).
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

  // A handle used after its loader's destruction gets MS_ERR_DESTROYED until this many more
  // loaders of the metaspace died (docs/guarantees.md).
  static constexpr size_t kDeadHandlesRemembered = DeadHandles::kRemembered;

 private:
  explicit Metaspace(const ms_settings_t& settings);
  // Calls f(loader) for every live loader, with the registry lock and that loader's lock held.
  template <typename F>
  void visit_loaders(F f);
  // The dead handles are consistent, none is a live loader's, each live loader's death has room.
  bool verify_dead_handles();
  // refuse_handle() with registry_lock_ held.
  ms_error_t refuse_handle_locked(uintptr_t handle);
  // Brings the counters up to date, skipping loaders that are busy (never waits for one).
  void fold_all_loaders();
  // The totals of every space from its counters, under both chunk managers' locks.
  void space_totals(ms_stats_t& t, BookkeepingUsage bookkeeping[2]);

  // Loader objects have slabs of their own, counted as the non-class space's overhead and
  // returned when free like the rest of its bookkeeping. Apart, so that a page that held loader
  // objects holds nothing else later: loader_stats() may read a stale handle's object (a freed
  // or reused one, or zeros) under the registry lock, and every write to what it reads there is
  // made under that lock too (creation, death).
  SlabAllocator& loader_slabs() { return *loader_objects_; }
  // The space's bookkeeping outside chunks: its context's, and for the non-class space the
  // loader objects. O(1), lock-free.
  size_t outside_overhead_bytes(ms_space_t space) const {
    const Context& c = space == MS_SPACE_CLASS ? class_space_->context() : *nonclass_;
    return c.overhead_bytes() + (space == MS_SPACE_NONCLASS ? loader_objects_->committed_bytes() : 0);
  }
  void free_loader_object(LoaderMetaspace* l);
  // A new object whose handle, with some tag, is none of the dead handles; null with the error
  // recorded. Caller holds registry_lock_.
  LoaderMetaspace* new_loader_object();
  // Maps settings_.archive_path and sets *class_wish right above it. A refusal is recorded for
  // archive_status; false only if the policy is MS_ARCHIVE_REQUIRE (error recorded).
  bool map_archive(uintptr_t* class_wish);
  // Records why the archive is left out; false (and archive_refused_) under MS_ARCHIVE_REQUIRE.
  bool leave_out_archive();

  ms_settings_t settings_;
  CommitLimiter limiter_;
  std::unique_ptr<Context> nonclass_;
  std::unique_ptr<SlabAllocator> loader_objects_;  // see loader_slabs()
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

  mutable Mutex registry_lock_;
  LoaderMetaspace* live_ = nullptr;  // owned; doubly linked through prev_/next_
  size_t live_count_ = 0;
  size_t live_by_kind_[MS_LOADER_KIND_COUNT] = {};
  // The handles of the loaders that died last (under registry_lock_), in the bookkeeping slabs.
  std::unique_ptr<DeadHandles> dead_;
  // Dead loaders whose handles could not be remembered yet (no room: the bookkeeping refused),
  // oldest first: their objects stay, marked, until a later death finds room
  // (forget_kept_objects). Under registry_lock_.
  LoaderObjectQueue kept_;
  // Moves every kept object's handle to dead_ (room reserved) and frees the object.
  void forget_kept_objects();
  // Loader objects all of whose handles are remembered as dead, oldest first
  // (new_loader_object): at most 1 024 / 14 + 1 at a time while they are used up; purge() frees
  // those that are not any more. Under registry_lock_.
  LoaderObjectQueue parked_;
  void free_usable_parked_objects();
  // Gives l the first tag, from kHandleTags[first] on (wrapping), whose handle is not a dead one.
  bool choose_tag(LoaderMetaspace* l, size_t first);
  // The object and tag (its index) of the loader that died last: the slab hands that object out
  // next, and the tag after it is the first one to try.
  uintptr_t last_freed_object_ = 0;
  size_t last_freed_tag_ = 0;
};

}  // namespace metaspace
