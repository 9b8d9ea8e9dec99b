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
  dead_ = std::make_unique<DeadHandles>(nonclass_->bookkeeping(), *loader_objects_);
}

void Metaspace::free_loader_object(LoaderMetaspace* l) { loader_slabs().destroy(l); }

namespace {

// The tags a handle may carry: 4 bits (loader objects are 16-byte aligned), but never 7 in the
// low 3 bits. A live loader's cookie is handle ^ secret, and the secret's low 3 bits are set
// (api/handle_secret.cpp), so a cookie is never an 8-byte aligned word: no pointer (a free list
// link of the slab, a self-pointing word) can look like one.
constexpr uint8_t kHandleTags[] = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14};
constexpr size_t kTagCount = sizeof(kHandleTags);
static_assert(kTagCount == 14 && MS__HANDLE_TAG_MASK == 15);
size_t tag_index(uint8_t tag) { return tag < 7 ? tag : tag - 1u; }

}  // namespace

bool Metaspace::choose_tag(LoaderMetaspace* l, size_t first) {
  for (size_t i = 0; i < kTagCount; i++) {
    l->set_tag(kHandleTags[(first + i) % kTagCount]);
    if (!dead_->contains_allocated(l->handle())) return true;
  }
  return false;
}

LoaderMetaspace* Metaspace::new_loader_object() {
  MS_ASSERT_LOCKED(registry_lock_);
  // The slab hands the object of the loader that died last out first (its page is hot), so a
  // runtime that creates and destroys loaders in a loop gets one object back each time, with
  // the tag after its last one. Once its 14 handles are all remembered as dead the object is
  // parked (it would come back first every time, and each create tried all its tags and all
  // the parked ones': bench_metaspace loader_empty went from 63 ns to 1.3 µs), and the oldest
  // parked object is tried instead, or another one from the slab.
  LoaderMetaspace* l = loader_slabs().create<LoaderMetaspace>(*loader_env_);
  if (l == nullptr) return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
  size_t first = reinterpret_cast<uintptr_t>(l) == last_freed_object_ ? last_freed_tag_ + 1 : 0;
  while (!choose_tag(l, first)) {
    parked_.push_back(l);
    if (parked_.first() != l && choose_tag(parked_.first(), 0)) return parked_.pop_front();
    l = loader_slabs().create<LoaderMetaspace>(*loader_env_);
    if (l == nullptr) return nullptr;
    first = 0;
  }
  return l;
}

void Metaspace::free_usable_parked_objects() {
  for (LoaderMetaspace* l = parked_.first(); l != nullptr;) {
    LoaderMetaspace* next = l->next_;
    if (choose_tag(l, 0)) {
      parked_.unlink(l);
      free_loader_object(l);
    }
    l = next;
  }
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
  // Arenas first (they return chunks), then the spaces unmap everything.
  while (live_ != nullptr) {
    LoaderMetaspace* l = live_;
    live_ = l->next_;
    l->close();
    free_loader_object(l);
  }
  while (!kept_.empty()) free_loader_object(kept_.pop_front());
  while (!parked_.empty()) free_loader_object(parked_.pop_front());
  dead_.reset();
  loader_objects_.reset();
  micro_pool_.reset();  // returns its current chunks
  nonclass_.reset();     // before the class space, whose slabs it borrows
  class_space_.reset();
}

LoaderMetaspace* Metaspace::create_loader(ms_loader_kind_t kind, unsigned flags) {
  if (kind != MS_LOADER_BOOT && kind != MS_LOADER_STANDARD && kind != MS_LOADER_MICRO) {
    fail(MS_ERR_INVALID_ARGUMENT, "loader kind %d is unknown", kind);
    return nullptr;
  }
  if ((flags & ~MS_LOADER_SHARED) != 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "unknown loader flags %#x", flags & ~MS_LOADER_SHARED);
    return nullptr;
  }
  std::lock_guard<Mutex> guard(registry_lock_);
  LoaderMetaspace* l = new_loader_object();
  if (l == nullptr) return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
  bool opened = false;
  try {
    opened = l->open(kind, flags);
  } catch (...) {  // std::bad_alloc of a heap structure (checked mode): the API barrier reports it
    free_loader_object(l);
    throw;
  }
  if (!opened) {
    free_loader_object(l);
    return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
  }
  l->prev_ = nullptr;
  l->next_ = live_;
  if (live_ != nullptr) live_->prev_ = l;
  live_ = l;
  live_count_++;
  live_by_kind_[kind]++;
  return l;
}

ms_error_t Metaspace::destroy_loader(LoaderMetaspace* l) {
  std::lock_guard<Mutex> guard(registry_lock_);
  if (!l->alive()) return fail(MS_ERR_DESTROYED, "loader %p was already destroyed", (void*)l);
  if (l->prev_ != nullptr) l->prev_->next_ = l->next_; else live_ = l->next_;
  if (l->next_ != nullptr) l->next_->prev_ = l->prev_;
  l->prev_ = l->next_ = nullptr;
  live_count_--;
  live_by_kind_[l->kind()]--;
  ms_error_t result = l->close();
  last_freed_object_ = reinterpret_cast<uintptr_t>(l);
  last_freed_tag_ = tag_index(static_cast<uint8_t>(l->handle() & MS__HANDLE_TAG_MASK));
  // Nothing refers to the object any more (its arenas, windows and pooled runs went with
  // close()): it is free for the next loader, under another handle, once its handle is
  // remembered. Without room for that (the bookkeeping refused), the object is kept, dead, and
  // says so itself (refuse_handle), until a later death finds room for both.
  if (dead_->reserve(dead_->size() + kept_.size() + 1)) {
    forget_kept_objects();
    dead_->add(l->handle());
    free_loader_object(l);
  } else {
    clear_error();  // the loader is destroyed all the same
    l->mark_kept_dead();
    kept_.push_back(l);
  }
  return result;
}

void Metaspace::forget_kept_objects() {
  MS_ASSERT_LOCKED(registry_lock_);
  // They died first: their handles go in first, in the order of death.
  while (!kept_.empty()) {
    LoaderMetaspace* l = kept_.pop_front();
    dead_->add(l->handle());
    free_loader_object(l);
  }
}

bool Metaspace::verify_dead_handles() {
  std::lock_guard<Mutex> guard(registry_lock_);
  if (!dead_->verify()) return false;
  size_t live = 0;
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    // O(1) a loader: its place's marks are exact (DeadHandles::verify checks them).
    MS_VERIFY(DeadHandles::page_stamped(l) && !dead_->marked(l->handle()),
              "live loader %p has a dead handle, or its page no dead handles' marks",
              reinterpret_cast<void*>(l->handle()));
    live++;
  }
  if (!kept_.verify("kept dead", [&](const LoaderMetaspace* l) {
        MS_VERIFY(!l->alive() && l->kept_dead() && !dead_->contains(l->handle()),
                  "kept dead loader object %p: alive %d, kept %d", (const void*)l, l->alive(),
                  l->kept_dead());
        return true;
      }) ||
      !parked_.verify("parked", [](const LoaderMetaspace* l) {
        MS_VERIFY(!l->alive(), "parked loader object %p is alive", (const void*)l);
        return true;
      })) {
    return false;
  }
  size_t kept = kept_.size(), parked = parked_.size();
  MS_VERIFY(loader_slabs().live_allocations() == live + kept + parked,
            "%zu loader objects for %zu live loaders, %zu kept dead ones, %zu parked",
            loader_slabs().live_allocations(), live, kept, parked);
  return true;
}

ms_error_t Metaspace::refuse_handle(uintptr_t handle) {
  std::lock_guard<Mutex> guard(registry_lock_);
  return refuse_handle_locked(handle);
}

ms_error_t Metaspace::refuse_handle_locked(uintptr_t handle) {
  MS_ASSERT_LOCKED(registry_lock_);
  LoaderMetaspace* l = LoaderMetaspace::object_of(handle);
  bool kept = !kept_.empty() && loader_slabs().readable(l, sizeof(LoaderMetaspace)) &&
              l->valid_handle() && l->kept_dead() && l->handle() == handle;
  if (kept || dead_->contains(handle)) {
    return fail(MS_ERR_DESTROYED, "loader %p was destroyed", reinterpret_cast<void*>(handle));
  }
  return fail(MS_ERR_INVALID_ARGUMENT, "%p is not a loader handle",
              reinterpret_cast<void*>(handle));
}

ms_error_t Metaspace::loader_stats(uintptr_t handle, LoaderStats* out) {
  std::unique_lock<Mutex> registry(registry_lock_);
  LoaderMetaspace* l = LoaderMetaspace::object_of(handle);
  // Under the registry lock no loader dies, so what the object says now holds until its own
  // lock is taken: it is this handle's loader only if it is alive and carries the handle.
  if (!loader_slabs().readable(l, sizeof(LoaderMetaspace)) || !l->valid_handle() || !l->alive() ||
      l->handle() != handle) {
    return refuse_handle_locked(handle);  // at the same instant: no loader died in between
  }
  std::lock_guard<LoaderLock> guard(l->lock());
  registry.unlock();
  std::lock_guard<std::mutex> nc(nonclass_->chunks().lock());
  std::lock_guard<std::mutex> cl(class_space_->context().chunks().lock());
  *out = l->stats_locked();
  return MS_OK;
}

void Metaspace::purge() {
  micro_pool_->trim();  // a current shared chunk nobody holds any more
  nonclass_->chunks().purge();
  class_space_->context().chunks().purge();
  // After the chunk managers: removing nodes and merging chunks frees bookkeeping.
  {
    // Parked loader objects whose handles were all forgotten since go back.
    std::lock_guard<Mutex> guard(registry_lock_);
    free_usable_parked_objects();
  }
  nonclass_->bookkeeping().purge();
  loader_objects_->purge();
  class_space_->context().bookkeeping().purge();
}

namespace {

void add_space(ms_space_stats_t& to, const ms_space_stats_t& from) {
  to.reserved_bytes += from.reserved_bytes;
  to.committed_bytes += from.committed_bytes;
  to.used_bytes += from.used_bytes;
  to.free_in_chunks_bytes += from.free_in_chunks_bytes;
  to.free_chunks_bytes += from.free_chunks_bytes;
  to.free_blocks_bytes += from.free_blocks_bytes;
  to.deallocated_bytes += from.deallocated_bytes;
  to.salvaged_bytes += from.salvaged_bytes;
  to.alignment_gap_bytes += from.alignment_gap_bytes;
  to.free_blocks_count += from.free_blocks_count;
  to.fence_bytes += from.fence_bytes;
  to.overhead_bytes += from.overhead_bytes;
  to.chunks_in_use += from.chunks_in_use;
  to.free_chunks += from.free_chunks;
  to.nodes += from.nodes;
  to.root_chunks += from.root_chunks;
  for (int l = 0; l < MS_MAX_CHUNK_LEVELS; l++) {
    to.free_chunks_by_level[l].count += from.free_chunks_by_level[l].count;
    to.free_chunks_by_level[l].bytes += from.free_chunks_by_level[l].bytes;
    to.free_chunks_by_level[l].committed_bytes += from.free_chunks_by_level[l].committed_bytes;
  }
}

}  // namespace

// How a snapshot stays exact without stopping the world
//
// A snapshot used to take the registry lock and every loader lock at once (783 ms and +618 MiB
// at 1 M loaders, while every loader waited). Now:
//   1. Loaders are visited one at a time under the registry lock (which only loader creation
//      and destruction take): each visit locks that one loader, folds its arenas into the space
//      counters (SpaceUsage) and, for reports, takes its statistics. Nothing is kept per loader
//      unless per-loader statistics are asked for.
//   2. The totals then come from the counters alone, read under both chunk managers' locks (no
//      chunk changes hands, nothing is committed or uncommitted) and between two looks at the
//      counters' update sequence (SpaceUsage::read_begin/read_end), so they are one consistent
//      state: committed (commit masks), free chunks (free lists), used, free blocks and fences
//      (counters), and free in chunks as the rest, which the counters' rules keep ≥ 0. The
//      identity holds exactly whatever runs concurrently.
// What it costs: step 1 is linear in loaders but touches only each loader's lock and a few
// fields (counters of an idle loader need no atomic); step 2 is O(levels + free chunks).
// ms_get_usage skips step 1: O(1).
template <typename F>
void Metaspace::visit_loaders(F f) {
  std::lock_guard<Mutex> registry(registry_lock_);
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    std::lock_guard<LoaderLock> guard(l->lock());
    f(*l);
  }
}

// No lock is taken: with the gate closed no thread holds any (or changes the registry). Only
// the non-class bins the header's inline paths use (ms__loader_head.bins) need the exclusion:
// the class arena's owner paths run inside exported calls, which the gate holds back. The walk
// reads each live loader's head (~80 ns a loader, 82 ms at 1 M loaders: one dependent load
// each); it writes only the bins of those that freed something.
void Metaspace::exclude_owners_for_fork(std::vector<ms__free_bins*>& excluded) {
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    if (ms__free_bins* b = __atomic_load_n(&l->bins, __ATOMIC_RELAXED)) {
      excluded.push_back(b);  // first: if it throws, b is not excluded
      OwnerExclusion::exclude(*b);
    }
  }
}

// Totals only: a loader whose lock is taken is skipped rather than waited for. Whoever holds it
// is on a slow path (which folds before it lets go), destroying the loader (which takes it out
// of the counters first), or another statistics call (which folds it); what it bumped before
// counts as free in chunks until then, as for ms_get_usage.
void Metaspace::fold_all_loaders() {
  std::lock_guard<Mutex> registry(registry_lock_);
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    std::unique_lock<LoaderLock> guard(l->lock(), std::try_to_lock);
    if (guard.owns_lock()) l->fold_usage_locked();
  }
}

void Metaspace::space_totals(ms_stats_t& t, BookkeepingUsage bookkeeping[2]) {
  Context* contexts[2] = {nonclass_.get(), &class_space_->context()};
  std::lock_guard<std::mutex> nc_lock(contexts[0]->chunks().lock());
  std::lock_guard<std::mutex> cl_lock(contexts[1]->chunks().lock());
  size_t outside_overhead[2] = {};
  for (int s = 0; s < 2; s++) {
    ms_space_stats_t& sp = t.space[s];
    const Context& c = *contexts[s];
    const ChunkManager& cm = c.chunks();
    sp.reserved_bytes = c.vslist().reserved_bytes();
    // Bookkeeping is memory the space holds: part of committed, shown apart as overhead. The
    // part that lies inside chunks in use (loaders' arenas) is committed chunk memory already;
    // it joins overhead with the counters below.
    // As outside_overhead_bytes(), from the parts the breakdown shows, each read once.
    BookkeepingUsage& bk = bookkeeping[s];
    bk.node_bytes = c.vslist().bookkeeping_bytes();
    if (c.counts_bookkeeping()) bk.slabs = c.bookkeeping().usage();
    if (s == MS_SPACE_NONCLASS) bk.loader_objects = loader_objects_->usage();
    sp.overhead_bytes = bk.bytes();
    sp.committed_bytes = c.vslist().committed_bytes() + sp.overhead_bytes;
    outside_overhead[s] = sp.overhead_bytes;
    sp.nodes = c.vslist().nodes().size();
    for (const auto& n : c.vslist().nodes()) sp.root_chunks += n->root_chunks_carved();
    std::vector<FreeChunkLevelStats> levels = cm.free_chunk_stats_locked();
    for (size_t l = 0; l < levels.size(); l++) {
      sp.free_chunks += levels[l].count;
      sp.free_chunks_bytes += levels[l].committed_bytes;
      sp.free_chunks_by_level[l] = {levels[l].count, levels[l].bytes, levels[l].committed_bytes};
    }
    sp.chunks_in_use = cm.chunks_in_use_locked();
    t.commits += c.vslist().commit_calls();
    t.uncommits += c.vslist().uncommit_calls();
  }
  // The counters of both spaces at one instant (a non-class arena's fold may touch both).
  const SpaceUsage* usage[2] = {&contexts[0]->chunks().usage(), &contexts[1]->chunks().usage()};
  for (int attempt = 0;; attempt++) {
    uint64_t v[2] = {0, 0};  // read only when both read_begin calls ran (GCC cannot see it)
    bool quiet = usage[0]->read_begin(&v[0]) && usage[1]->read_begin(&v[1]);
    for (int s = 0; s < 2; s++) {
      ms_space_stats_t& sp = t.space[s];
      const SpaceUsage& u = *usage[s];
      sp.used_bytes = u.used_bytes.load(std::memory_order_relaxed);
      sp.deallocated_bytes = u.free_block_bytes[0].load(std::memory_order_relaxed);
      sp.salvaged_bytes = u.free_block_bytes[1].load(std::memory_order_relaxed);
      sp.alignment_gap_bytes = u.free_block_bytes[2].load(std::memory_order_relaxed);
      sp.free_blocks_bytes = sp.deallocated_bytes + sp.salvaged_bytes + sp.alignment_gap_bytes;
      sp.free_blocks_count = u.free_block_count.load(std::memory_order_relaxed);
      sp.fence_bytes = u.fence_bytes.load(std::memory_order_relaxed);
      bookkeeping[s].arenas_in_chunks_bytes =
          u.overhead_in_chunks_bytes.load(std::memory_order_relaxed);
      sp.overhead_bytes = outside_overhead[s] + bookkeeping[s].arenas_in_chunks_bytes;
    }
    if (quiet && usage[0]->read_end(v[0]) && usage[1]->read_end(v[1])) break;
    // Loaders fold on their slow paths only; a reader that keeps losing yields and tries again.
    if (attempt > 16) std::this_thread::yield();
  }
  for (int s = 0; s < 2; s++) {
    ms_space_stats_t& sp = t.space[s];
    sp.free_in_chunks_bytes = sp.committed_bytes - sp.free_chunks_bytes - sp.used_bytes -
                              sp.free_blocks_bytes - sp.fence_bytes - sp.overhead_bytes;
    add_space(t.total, sp);
  }
}

Snapshot Metaspace::snapshot(const SnapshotOptions& options) {
  Snapshot snap;
  ms_stats_t& t = snap.totals;
  if (options.loaders) {
    visit_loaders([&](LoaderMetaspace& l) {
      l.fold_usage_locked();
      std::lock_guard<std::mutex> nc(nonclass_->chunks().lock());
      std::lock_guard<std::mutex> cl(class_space_->context().chunks().lock());
      snap.loaders.push_back(l.stats_locked());
    });
  } else {
    fold_all_loaders();
  }
  space_totals(t, snap.bookkeeping);
  {
    std::lock_guard<Mutex> registry(registry_lock_);
    t.loaders = live_count_;
    for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) t.loaders_by_kind[k] = live_by_kind_[k];
  }
  if (archive_ != nullptr) t.archive = archive_->stats();
  t.chunk_levels = static_cast<unsigned>(nonclass_->chunks().geometry().levels());
  t.commit_granule_bytes = settings_.commit_granule_bytes;
  t.allocations_counted = loader_env_->count_allocations ? 1 : 0;
  return snap;
}

void Metaspace::usage(ms_usage_t* out) const {
  ms_usage_t u{};
  const Context* contexts[2] = {nonclass_.get(), &class_space_->context()};
  for (int s = 0; s < 2; s++) {
    ms_space_usage_t& sp = u.space[s];
    const Context& c = *contexts[s];
    sp.reserved_bytes = c.vslist().reserved_bytes();
    // Bookkeeping is part of committed, shown apart as overhead (as in the snapshot); the part
    // inside chunks in use is chunk memory already.
    sp.overhead_bytes = outside_overhead_bytes(static_cast<ms_space_t>(s));
    sp.committed_bytes = c.vslist().committed_bytes() + sp.overhead_bytes;
    sp.overhead_bytes += c.chunks().usage().overhead_in_chunks_bytes.load(std::memory_order_relaxed);
    sp.used_bytes = c.chunks().usage().used_bytes.load(std::memory_order_relaxed);
    u.total.reserved_bytes += sp.reserved_bytes;
    u.total.committed_bytes += sp.committed_bytes;
    u.total.used_bytes += sp.used_bytes;
    u.total.overhead_bytes += sp.overhead_bytes;
  }
  *out = u;
}

ms_error_t Metaspace::verify() {
  // Stop-the-world-ish, but never more than one loader lock at a time: each loader is checked
  // (and folded into the counters) alone, then the spaces, then the identity from the counters.
  // If no counter moved between two visits of all loaders, nothing ran on a slow path and no
  // loader bumped in between, so the per-loader statistics must add up to the counters exactly.
  auto versions = [&](uint64_t v[2]) {
    bool a = nonclass_->chunks().usage().read_begin(&v[0]);
    bool b = class_space_->context().chunks().usage().read_begin(&v[1]);
    return a && b;
  };
  auto check = [&]() -> bool {
    {
      std::lock_guard<Mutex> registry(registry_lock_);
      size_t n = 0;
      for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
        std::lock_guard<LoaderLock> guard(l->lock());
        MS_VERIFY(l->alive(), "dead loader %p in the live list", (void*)l);
        if (!l->verify_locked()) return false;
        l->fold_usage_locked();
        n++;
      }
      MS_VERIFY(n == live_count_, "%zu live loaders listed, counter says %zu", n, live_count_);
    }
    if (!limiter_.verify() || !nonclass_->verify() || !class_space_->verify() ||
        !loader_objects_->verify() || !verify_dead_handles() ||
        !micro_pool_->verify()) {
      return false;
    }
    if (archive_ != nullptr && !archive_->verify()) return false;
    uint64_t va[2], vb[2];
    // A pooled allocation or death changes the pool and then the counters under its loader's
    // lock, which the visits below wait for: it cannot straddle the window unseen.
    uint64_t pool_version = micro_pool_->version();
    bool quiet = versions(va);
    Snapshot snap = snapshot();
    visit_loaders([](LoaderMetaspace& l) { l.fold_usage_locked(); });
    size_t pool_live[2] = {}, pool_free[2] = {};
    size_t overhead_counted[2] = {};
    for (ms_space_t s : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
      const ChunkManager& cm =
          s == MS_SPACE_NONCLASS ? nonclass_->chunks() : class_space_->context().chunks();
      overhead_counted[s] = cm.usage().overhead_in_chunks_bytes.load(std::memory_order_relaxed);
      pool_live[s] = micro_pool_->live_bytes(s);
      // The shared chunks' committed bytes no live loader holds.
      pool_free[s] = micro_pool_->free_in_chunks_bytes(s);
    }
    quiet = quiet && versions(vb) && va[0] == vb[0] && va[1] == vb[1] &&
            micro_pool_->version() == pool_version;
    size_t used[2] = {}, free_blocks[2] = {}, fences[2] = {}, free_in_chunks[2] = {};
    size_t pooled[2] = {}, in_chunks_overhead[2] = {};
    for (const LoaderStats& ls : snap.loaders) {
      for (int s = 0; s < 2; s++) {
        in_chunks_overhead[s] += ls.arena[s].home_prefix_bytes;
        used[s] += ls.used_bytes[s];
        free_blocks[s] += ls.free_blocks_bytes[s];
        fences[s] += ls.fence_bytes[s];
        free_in_chunks[s] += ls.arena[s].committed_bytes - ls.arena[s].consumed_bytes;
        pooled[s] += ls.pooled_bytes[s];
      }
    }
    for (int s = 0; s < 2; s++) free_in_chunks[s] += pool_free[s];
    for (int s = 0; s < 2; s++) {
      const ms_space_stats_t& sp = snap.totals.space[s];
      // free in chunks is the rest of the identity: it must not have wrapped around.
      MS_VERIFY(sp.free_in_chunks_bytes <= sp.committed_bytes,
                "space %d: committed %zu < used %zu + free chunks %zu + free blocks %zu + "
                "fences %zu + overhead %zu", s, sp.committed_bytes, sp.used_bytes,
                sp.free_chunks_bytes, sp.free_blocks_bytes, sp.fence_bytes, sp.overhead_bytes);
      MS_VERIFY(sp.free_blocks_bytes ==
                    sp.deallocated_bytes + sp.salvaged_bytes + sp.alignment_gap_bytes,
                "space %d: free blocks %zu != deallocated %zu + salvaged %zu + gaps %zu", s,
                sp.free_blocks_bytes, sp.deallocated_bytes, sp.salvaged_bytes,
                sp.alignment_gap_bytes);
      if (!quiet) continue;
      MS_VERIFY(pooled[s] == pool_live[s], "space %d: loaders hold %zu pooled bytes, the micro "
                "pool counts %zu", s, pooled[s], pool_live[s]);
      // Loaders' arenas inside their chunks: counted as overhead, once each.
      MS_VERIFY(in_chunks_overhead[s] == overhead_counted[s],
                "space %d: loaders' arenas take %zu bytes of their chunks, overhead counts %zu", s,
                in_chunks_overhead[s], overhead_counted[s]);
      MS_VERIFY(used[s] == sp.used_bytes && free_blocks[s] == sp.free_blocks_bytes &&
                    fences[s] == sp.fence_bytes && free_in_chunks[s] == sp.free_in_chunks_bytes,
                "space %d: loaders add up to used %zu, free blocks %zu, fences %zu, free in "
                "chunks %zu; the counters say %zu, %zu, %zu, %zu", s, used[s], free_blocks[s],
                fences[s], free_in_chunks[s], sp.used_bytes, sp.free_blocks_bytes,
                sp.fence_bytes, sp.free_in_chunks_bytes);
    }
    return true;
  };
  if (!check()) return ms_last_error() != MS_OK ? ms_last_error() : MS_ERR_CORRUPTED;
  std::lock_guard<std::mutex> nc_lock(nonclass_->chunks().lock());
  std::lock_guard<std::mutex> cl_lock(class_space_->context().chunks().lock());
  size_t committed = nonclass_->vslist().committed_bytes() +
                     class_space_->context().vslist().committed_bytes();
  if (committed != limiter_.committed_bytes()) {
    return fail(MS_ERR_CORRUPTED, "limiter counts %zu committed bytes, the spaces %zu",
                limiter_.committed_bytes(), committed);
  }
  return MS_OK;
}

}  // namespace metaspace
