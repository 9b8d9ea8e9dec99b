#include "instance/metaspace.hpp"

#include <thread>

#include "arena/owner_exclusion.hpp"
#include "common/error.hpp"
#include "common/verify.hpp"
#include "instance/live_metaspaces.hpp"
#include "os/unique_addresses.hpp"
#include "instance/settings.hpp"

namespace metaspace {

static_assert(kMaxLevels == MS_MAX_CHUNK_LEVELS, "public and internal level counts differ");

std::unique_ptr<Metaspace> Metaspace::create(const ms_settings_t& requested) {
  ms_settings_t settings;
  if (complete_settings(requested, &settings) != MS_OK) return nullptr;
  std::unique_ptr<Metaspace> ms(new Metaspace(settings));
  if (ms->archive_refused_) return nullptr;  // MS_ARCHIVE_REQUIRE: the refusal is recorded
  // The reservations left their error.
  if (!ms->class_space_->ok() || !ms->nonclass_->ok() || !ms->loader_objects_->ok()) return nullptr;
  live_metaspaces::add(ms.get());
  return ms;
}

void* Metaspace::operator new(size_t bytes) { return os::unique_addresses::take(bytes); }

void Metaspace::operator delete(void* p, size_t bytes) noexcept {
  os::unique_addresses::give_back(p, bytes);
}

Metaspace::Metaspace(const ms_settings_t& settings)
    : settings_(settings), limiter_(settings.max_committed_bytes) {
  ReclaimPolicy policy = ReclaimPolicy::of(settings.reclaim);
  bool protect = settings.checked != 0;
  // Checked mode takes dead loaders' memory away at once, so stale readers fault.
  if (protect && policy.merge) policy.uncommit_on_return = true;
  NodeGeometry nonclass{.reserve_bytes = settings.node_bytes,
                        .root_chunk_bytes = settings.root_chunk_bytes,
                        .granule_bytes = settings.commit_granule_bytes,
                        .protect_uncommitted = protect};
  NodeGeometry klass = nonclass;
  klass.reserve_bytes = settings.class_space_bytes;
  uintptr_t class_wish = settings.class_space_base;
  if (settings.archive_path != nullptr && !map_archive(&class_wish)) return;
  // The class space makes the slabs both spaces use (after its own range); the non-class space
  // counts them (ContextBookkeeping).
  class_space_ = std::make_unique<ClassSpace>(klass, limiter_, policy, class_wish,
                                              settings.class_alignment_bytes,
                                              ContextBookkeeping{
                                                  .counted = false,
                                                  .reserve_bytes = bookkeeping_range_bytes(settings),
                                                  .name = kStructuresRangeName});
  if (archive_ != nullptr && class_space_->ok()) {
    if (class_space_->base() == class_wish) {
      class_space_->set_encoding_base(archive_->base());
    } else {
      // Someone took the range between the archive's release of it and the class space's
      // reservation: the two are not adjacent, so narrow pointers cannot cover both.
      fail(MS_ERR_RESERVE_FAILED, "archive %s: the class space could not be placed right above "
           "it at %#zx", archive_path_.c_str(), static_cast<size_t>(class_wish));
      archive_.reset();
      if (!leave_out_archive()) return;
    }
  }
  if (archive_ != nullptr) {
    archive_lo_ = archive_->base();
    archive_bytes_ = archive_->file_bytes();
  }
  limiter_.set_policy({settings.gc_min_free_percent, settings.gc_max_free_percent,
                       settings.gc_min_expansion_bytes, settings.commit_granule_bytes});
  // The class space first: it may ask for a base address, and no other reservation may take
  // that range before it.
  if (!class_space_->ok()) return;
  nonclass_ = std::make_unique<Context>(
      MS_SPACE_NONCLASS, nonclass, limiter_, policy, 0,
      ContextBookkeeping{.shared = &class_space_->context().bookkeeping(), .counted = true});
  loader_objects_ = std::make_unique<SlabAllocator>(
      SlabAllocator::Options{.reserve_bytes = bookkeeping_range_bytes(settings),
                             .return_at_once = policy.uncommit_on_return,
                             .name = kLoaderObjectsRangeName});
  limiter_.set_threshold(settings.gc_threshold_bytes, settings.gc_callback,
                         settings.gc_callback_user);
  // Shared chunks of one granule: a shared chunk's death is its granule's return.
  size_t shared_chunk = settings.commit_granule_bytes > 4 * KiB ? settings.commit_granule_bytes
                                                                : 4 * KiB;
  micro_pool_ = std::make_unique<MicroPool>(
      nonclass_->chunks(), class_space_->context().chunks(),
      MicroPool::Options{.chunk_bytes = shared_chunk,
                         .class_alignment = settings.class_alignment_bytes,
                         .reuse_dead_runs = settings.checked == 0});
  loader_env_ = std::make_unique<LoaderEnvironment>(LoaderEnvironment{
      *nonclass_, *class_space_, limiter_, *micro_pool_, handle(), protect,
      settings.count_allocations != 0 || protect});
  // A loader object finds the environment through its slab page's header (LoaderMetaspace::env).
  loader_objects_->set_page_owner(loader_env_.get());
  loaders_ = std::make_unique<LoaderRegistry>(*loader_objects_, *loader_env_,
                                              nonclass_->bookkeeping());
}

bool Metaspace::map_archive(uintptr_t* class_wish) {
  archive_path_ = settings_.archive_path;
  settings_.archive_path = archive_path_.c_str();  // the caller's string may not outlive us
  archive::MapRequest request;
  request.path = archive_path_.c_str();
  request.class_alignment_bytes = settings_.class_alignment_bytes;
  request.class_space_bytes = settings_.class_space_bytes;
  request.root_chunk_bytes = settings_.root_chunk_bytes;
  request.class_space_base = settings_.class_space_base;
  request.verify_data = settings_.archive_verify != 0;
  request.relocation = settings_.archive_relocation;
  archive_ = archive::ArchiveMapping::map(request);
  if (archive_ == nullptr) return leave_out_archive();
  archive_->release_class_space_range();
  *class_wish = archive_->class_space_wish();
  return true;
}

bool Metaspace::leave_out_archive() {
  archive_error_ = ms_last_error();
  archive_reason_ = ms_last_error_text();
  if (settings_.archive_policy == MS_ARCHIVE_REQUIRE) {
    archive_refused_ = true;
    return false;
  }
  clear_error();
  note("%s; going on without it (archive_policy=auto)", archive_reason_.c_str());
  return true;
}

Metaspace::~Metaspace() {
  live_metaspaces::remove(this);
  // Loaders first (their arenas return chunks), then the spaces unmap everything.
  loaders_.reset();
  loader_objects_.reset();
  micro_pool_.reset();  // returns its current chunks
  nonclass_.reset();     // before the class space, whose slabs it borrows
  class_space_.reset();
}

void Metaspace::purge() {
  micro_pool_->trim();  // a current shared chunk nobody holds any more
  nonclass_->chunks().purge();
  class_space_->context().chunks().purge();
  // After the chunk managers: removing nodes and merging chunks frees bookkeeping.
  // Parked loader objects whose handles were all forgotten since go back.
  loaders_->free_usable_parked();
  nonclass_->bookkeeping().purge();
  loader_objects_->purge();
  class_space_->context().bookkeeping().purge();
}

// No lock is taken: with the gate closed no thread holds any (or changes the registry). Only
// the non-class bins the header's inline paths use (ms__loader_head.bins) need the exclusion:
// the class arena's owner paths run inside exported calls, which the gate holds back. The walk
// reads each live loader's head (~80 ns a loader, 82 ms at 1 M loaders: one dependent load
// each); it writes only the bins of those that freed something.
void Metaspace::exclude_owners_for_fork(std::vector<ms__free_bins*>& excluded) {
  loaders_->visit_at_fork([&](LoaderMetaspace& l) {
    if (ms__free_bins* b = __atomic_load_n(&l.bins, __ATOMIC_RELAXED)) {
      excluded.push_back(b);  // first: if it throws, b is not excluded
      OwnerExclusion::exclude(*b);
    }
  });
}

}  // namespace metaspace
