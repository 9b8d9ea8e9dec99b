// ms_verify: every invariant of a metaspace, its loaders, spaces and counters, checked while
// it runs (Metaspace::verify, instance/metaspace.hpp).
#include <mutex>

#include "common/error.hpp"
#include "common/verify.hpp"
#include "instance/metaspace.hpp"

namespace metaspace {

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
    if (!loaders_->verify_live([](LoaderMetaspace& l) { l.fold_usage_locked(); })) return false;
    if (!limiter_.verify() || !nonclass_->verify() || !class_space_->verify() ||
        !loader_objects_->verify() || !loaders_->verify_handles() ||
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
    loaders_->visit([](LoaderMetaspace& l) { l.fold_usage_locked(); });
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
