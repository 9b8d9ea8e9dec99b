#include "instance/metaspace.hpp"

#include "common/error.hpp"
#include "common/verify.hpp"
#include "instance/settings.hpp"

namespace metaspace {

static_assert(kMaxLevels == MS_MAX_CHUNK_LEVELS, "public and internal level counts differ");

std::unique_ptr<Metaspace> Metaspace::create(const ms_settings_t& requested) {
  ms_settings_t settings;
  if (complete_settings(requested, &settings) != MS_OK) return nullptr;
  std::unique_ptr<Metaspace> ms(new Metaspace(settings));
  if (!ms->class_space_->ok()) return nullptr;  // the reservation left its error
  return ms;
}

Metaspace::Metaspace(const ms_settings_t& settings)
    : settings_(settings), limiter_(settings.max_committed_bytes) {
  ReclaimPolicy policy = ReclaimPolicy::of(settings.reclaim);
  bool protect = settings.checked != 0;
  // Checked mode takes dead loaders' memory away at once, so stale readers fault.
  if (protect && policy.merge) policy.uncommit_on_return = true;
  NodeGeometry nonclass{settings.node_bytes, settings.root_chunk_bytes,
                        settings.commit_granule_bytes, protect};
  NodeGeometry klass{settings.class_space_bytes, settings.root_chunk_bytes,
                     settings.commit_granule_bytes, protect};
  nonclass_ = std::make_unique<Context>(MS_SPACE_NONCLASS, nonclass, limiter_, policy, 0);
  class_space_ = std::make_unique<ClassSpace>(klass, limiter_, policy, settings.class_space_base,
                                              settings.class_alignment_bytes);
  limiter_.set_threshold(settings.gc_threshold_bytes, settings.gc_callback,
                         settings.gc_callback_user);
}

Metaspace::~Metaspace() {
  // Arenas first (they return chunks), then the spaces unmap everything.
  while (live_ != nullptr) {
    LoaderMetaspace* l = live_;
    live_ = l->next_;
    l->close();
    delete l;
  }
  dead_.clear();
  class_space_.reset();
  nonclass_.reset();
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
  std::lock_guard<std::mutex> guard(registry_lock_);
  // Owned here until it is linked: if opening it fails (std::bad_alloc, caught at the C API),
  // nothing is left behind.
  auto owned = std::make_unique<LoaderMetaspace>(*nonclass_, *class_space_, limiter_, handle());
  owned->open(kind, flags, settings_.checked != 0);
  LoaderMetaspace* l = owned.release();
  l->prev_ = nullptr;
  l->next_ = live_;
  if (live_ != nullptr) live_->prev_ = l;
  live_ = l;
  live_count_++;
  live_by_kind_[kind]++;
  return l;
}

ms_error_t Metaspace::destroy_loader(LoaderMetaspace* l) {
  std::lock_guard<std::mutex> guard(registry_lock_);
  if (!l->alive()) return fail(MS_ERR_DESTROYED, "loader %p was already destroyed", (void*)l);
  if (l->prev_ != nullptr) l->prev_->next_ = l->next_; else live_ = l->next_;
  if (l->next_ != nullptr) l->next_->prev_ = l->prev_;
  l->prev_ = l->next_ = nullptr;
  live_count_--;
  live_by_kind_[l->kind()]--;
  ms_error_t result = l->close();
  dead_.emplace_back(l);
  if (dead_.size() > kQuarantine) dead_.pop_front();
  return result;
}

void Metaspace::purge() {
  nonclass_->chunks().purge();
  class_space_->context().chunks().purge();
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

Snapshot Metaspace::snapshot() {
  Snapshot snap;
  ms_stats_t& t = snap.totals;
  std::lock_guard<std::mutex> registry(registry_lock_);
  std::vector<std::unique_lock<std::mutex>> loader_locks;
  loader_locks.reserve(live_count_);
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) loader_locks.emplace_back(l->lock());
  Context* contexts[2] = {nonclass_.get(), &class_space_->context()};
  std::lock_guard<std::mutex> nc_lock(contexts[0]->chunks().lock());
  std::lock_guard<std::mutex> cl_lock(contexts[1]->chunks().lock());

  snap.loaders.reserve(live_count_);
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    LoaderStats ls = l->stats_locked();
    for (int s = 0; s < 2; s++) {
      ms_space_stats_t& sp = t.space[s];
      sp.used_bytes += ls.used_bytes[s];
      sp.free_in_chunks_bytes += ls.arena[s].committed_bytes - ls.arena[s].consumed_bytes;
      sp.free_blocks_bytes += ls.free_blocks_bytes[s];
      sp.deallocated_bytes += ls.free_bytes_by_origin[s][0];
      sp.salvaged_bytes += ls.free_bytes_by_origin[s][1];
      sp.alignment_gap_bytes += ls.free_bytes_by_origin[s][2];
      sp.free_blocks_count += ls.arena[s].free_blocks_count;
      sp.fence_bytes += ls.fence_bytes[s];
    }
    snap.loaders.push_back(ls);
  }
  for (int s = 0; s < 2; s++) {
    ms_space_stats_t& sp = t.space[s];
    const Context& c = *contexts[s];
    const ChunkManager& cm = c.chunks();
    sp.reserved_bytes = c.vslist().reserved_bytes();
    sp.committed_bytes = c.vslist().committed_bytes();
    sp.nodes = c.vslist().nodes().size();
    for (const auto& n : c.vslist().nodes()) sp.root_chunks += n->root_chunks_carved();
    std::vector<FreeChunkLevelStats> levels = cm.free_chunk_stats_locked();
    for (size_t l = 0; l < levels.size(); l++) {
      sp.free_chunks += levels[l].count;
      sp.free_chunks_bytes += levels[l].committed_bytes;
      sp.free_chunks_by_level[l] = {levels[l].count, levels[l].bytes, levels[l].committed_bytes};
    }
    sp.chunks_in_use = cm.chunks_in_use_locked();
    sp.overhead_bytes = cm.header_pool_bytes_locked() + c.vslist().bookkeeping_bytes();
    // The loader objects themselves (one per loader, both arenas), charged to non-class.
    if (s == MS_SPACE_NONCLASS) {
      sp.overhead_bytes += (live_count_ + dead_.size()) * sizeof(LoaderMetaspace);
    }
    t.commits += c.vslist().commit_calls();
    t.uncommits += c.vslist().uncommit_calls();
    add_space(t.total, sp);
  }
  t.chunk_levels = static_cast<unsigned>(contexts[0]->chunks().geometry().levels());
  t.loaders = live_count_;
  for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) t.loaders_by_kind[k] = live_by_kind_[k];
  t.commit_granule_bytes = settings_.commit_granule_bytes;
  return snap;
}

ms_error_t Metaspace::verify() {
  auto check = [&]() -> bool {
    {
      std::lock_guard<std::mutex> registry(registry_lock_);
      size_t n = 0;
      for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
        std::lock_guard<std::mutex> guard(l->lock());
        MS_VERIFY(l->alive(), "dead loader %p in the live list", (void*)l);
        if (!l->verify_locked()) return false;
        n++;
      }
      MS_VERIFY(n == live_count_, "%zu live loaders listed, counter says %zu", n, live_count_);
    }
    if (!nonclass_->verify() || !class_space_->context().verify()) return false;
    Snapshot snap = snapshot();
    for (int s = 0; s < 2; s++) {
      const ms_space_stats_t& sp = snap.totals.space[s];
      size_t accounted = sp.used_bytes + sp.free_in_chunks_bytes + sp.free_chunks_bytes +
                         sp.free_blocks_bytes + sp.fence_bytes;
      MS_VERIFY(accounted == sp.committed_bytes,
                "space %d: committed %zu != used %zu + free in chunks %zu + free chunks %zu + "
                "free blocks %zu + fences %zu", s, sp.committed_bytes, sp.used_bytes,
                sp.free_in_chunks_bytes, sp.free_chunks_bytes, sp.free_blocks_bytes,
                sp.fence_bytes);
      MS_VERIFY(sp.free_blocks_bytes ==
                    sp.deallocated_bytes + sp.salvaged_bytes + sp.alignment_gap_bytes,
                "space %d: free blocks %zu != deallocated %zu + salvaged %zu + gaps %zu", s,
                sp.free_blocks_bytes, sp.deallocated_bytes, sp.salvaged_bytes,
                sp.alignment_gap_bytes);
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
