// The metaspace's statistics: the snapshot behind ms_get_stats and the reports, the O(1)
// usage, and one loader's statistics (Metaspace, instance/metaspace.hpp).
#include <mutex>
#include <thread>

#include "instance/metaspace.hpp"

namespace metaspace {

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

// Totals only: a loader whose lock is taken is skipped rather than waited for. Whoever holds it
// is on a slow path (which folds before it lets go), destroying the loader (which takes it out
// of the counters first), or another statistics call (which folds it); what it bumped before
// counts as free in chunks until then, as for ms_get_usage.
void Metaspace::fold_all_loaders() {
  loaders_->visit_idle([](LoaderMetaspace& l) { l.fold_usage_locked(); });
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
    loaders_->visit([&](LoaderMetaspace& l) {
      l.fold_usage_locked();
      std::lock_guard<std::mutex> nc(nonclass_->chunks().lock());
      std::lock_guard<std::mutex> cl(class_space_->context().chunks().lock());
      snap.loaders.push_back(l.stats_locked());
    });
  } else {
    fold_all_loaders();
  }
  space_totals(t, snap.bookkeeping);
  loaders_->count(&t.loaders, t.loaders_by_kind);
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

ms_error_t Metaspace::loader_stats(uintptr_t handle, LoaderStats* out) {
  LoaderMetaspace* l = loaders_->lock_live(handle);  // locked, and the registry let go
  if (l == nullptr) return ms_last_error();
  std::lock_guard<LoaderLock> guard(l->lock(), std::adopt_lock);
  std::lock_guard<std::mutex> nc(nonclass_->chunks().lock());
  std::lock_guard<std::mutex> cl(class_space_->context().chunks().lock());
  *out = l->stats_locked();
  return MS_OK;
}

}  // namespace metaspace
