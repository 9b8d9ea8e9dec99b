#include "chunks/chunk_manager.hpp"

#include "common/assert.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "chunks/root_chunk_area.hpp"
#include "common/error.hpp"
#include "common/verify.hpp"

namespace metaspace {

ChunkManager::ChunkManager(VirtualSpaceList& vslist, const ChunkGeometry& geometry,
                           ReclaimPolicy policy, SlabAllocator& bookkeeping)
    : vslist_(vslist),
      geometry_(geometry),
      policy_(policy),
      bookkeeping_(bookkeeping),
      pool_(bookkeeping),
      free_lists_(geometry.levels(), &vslist) {
  // The chunk start tables name headers by their offset in these slabs (4-byte slots).
  vslist_.set_chunk_header_base(bookkeeping.range_base());
}

ChunkManager::~ChunkManager() = default;

Chunk* ChunkManager::get_chunk(int preferred_level, int max_level, size_t min_committed_bytes) {
  if (!geometry_.valid(preferred_level) || !geometry_.valid(max_level) ||
      preferred_level > max_level || min_committed_bytes > geometry_.bytes(max_level)) {
    fail(MS_ERR_INVALID_ARGUMENT, "chunk request: levels %d..%d, %zu bytes committed",
         preferred_level, max_level, min_committed_bytes);
    return nullptr;
  }
  std::lock_guard<std::mutex> guard(lock_);
  MS_DEBUG_ONLY(VerifiedOperation verified(*this);)
  Chunk* c = take_chunk_locked(preferred_level, max_level, min_committed_bytes);
  if (c == nullptr) return nullptr;
  size_t want = policy_.commit_whole_chunks ? c->bytes : min_committed_bytes;
  if (ensure_committed_locked(c, want) != MS_OK) {
    return_chunk_locked(c);
    return nullptr;
  }
  MS_ASSERT(c->verify(), "%s", ms_last_error_text());
  return c;
}

Chunk* ChunkManager::get_uncommitted_chunk(int level) {
  // A chunk smaller than a granule shares its granule with neighbours and cannot be kept
  // uncommitted on its own.
  if (!geometry_.valid(level) || geometry_.bytes(level) < granule_bytes()) {
    fail(MS_ERR_INVALID_ARGUMENT, "uncommitted chunk request: level %d (granule %zu bytes)",
         level, granule_bytes());
    return nullptr;
  }
  std::lock_guard<std::mutex> guard(lock_);
  MS_DEBUG_ONLY(VerifiedOperation verified(*this);)
  Chunk* c = take_chunk_locked(level, level, 0);
  if (c == nullptr) return nullptr;
  // A free chunk may hold committed granules (its own, left by a policy that uncommits only in
  // purge, or a neighbour's in a shared granule): given back now, or the chunk is refused, since
  // memory that no arena accounts for must not hide behind it.
  refresh_committed_locked(c);
  if (mask_committed_bytes(c) > 0 && uncommit_locked(c) != MS_OK) {
    return_chunk_locked(c);
    return nullptr;
  }
  MS_ASSERT(c->committed_bytes == 0, "uncommitted chunk %p keeps %zu committed bytes",
            (void*)c->base, size_t{c->committed_bytes});
  return c;
}

Chunk* ChunkManager::take_chunk_locked(int preferred_level, int max_level,
                                       size_t min_committed_bytes) {
  MS_ASSERT_LOCKED(lock_);
  // The headers a split needs (one per level it goes down; a new root chunk one more) are
  // promised before anything changes, and no more: a spare header held in the pool sits in some
  // slab page and can be what keeps it (reserving for a split to any level kept 14 per space).
  Chunk* c = take_free_chunk_locked(preferred_level, max_level, min_committed_bytes);
  if (c != nullptr) {
    if (!pool_.reserve(static_cast<size_t>(std::max(preferred_level - int{c->level}, 0)))) {
      free_lists_.add(c);
      return nullptr;
    }
  } else {
    if (!pool_.reserve(static_cast<size_t>(preferred_level) + 1)) return nullptr;
    c = new_root_chunk_locked();
    if (c == nullptr) return nullptr;
  }
  if (c->level < preferred_level) {
    RootChunkArea::split(c, preferred_level, pool_, free_lists_);
  }
  c->state = Chunk::State::kInUse;
  c->used_bytes = 0;
  // Only in-use chunks record their start (ChunkStartTable: free chunks' starts kept pages of
  // slots for nothing). Enlarging in place keeps the base, so the start stays right.
  node_of(c)->chunk_starts().set(c->base, c->bytes, c);
  return c;
}

Chunk* ChunkManager::take_free_chunk_locked(int preferred, int max_level, size_t min_committed) {
  MS_ASSERT_LOCKED(lock_);
  // Committed chunks first, near the wanted size before larger ones, so that big arenas do not
  // eat the committed splinters that small loaders can use; then any chunk, then fresh memory.
  auto take = [&](Chunk* c) {
    if (c != nullptr) free_lists_.remove(c);
    return c;
  };
  int near = std::min(preferred + 2, max_level);
  for (int l = preferred; l <= near; l++) {
    if (Chunk* c = free_lists_.find_committed(l, min_committed)) return take(c);
  }
  for (int l = preferred - 1; l >= 0; l--) {
    if (Chunk* c = free_lists_.find_committed(l, min_committed)) return take(c);
  }
  for (int l = near + 1; l <= max_level; l++) {
    if (Chunk* c = free_lists_.find_committed(l, min_committed)) return take(c);
  }
  for (int l = preferred; l <= max_level; l++) {
    if (Chunk* c = free_lists_.first(l)) return take(c);
  }
  for (int l = preferred - 1; l >= 0; l--) {
    if (Chunk* c = free_lists_.first(l)) return take(c);
  }
  return nullptr;
}

Chunk* ChunkManager::new_root_chunk_locked() {
  MS_ASSERT_LOCKED(lock_);
  // Room first: once an area is carved it must be known here, whatever fails after.
  areas_.reserve(areas_.size() + 1);
  VirtualSpaceNode* node = nullptr;
  char* base = vslist_.allocate_root_chunk(&node);
  if (base == nullptr) return nullptr;
  Chunk* c = pool_.allocate();
  c->base = base;
  c->bytes = geometry_.root_bytes();
  c->level = 0;
  c->state = Chunk::State::kFree;
  areas_.push_back({node, c});
  return c;
}

namespace {

// A free chunk sits in a free list and may already be merged into its buddy; a pooled header
// belongs to no chunk. Returning either would corrupt the lists, so only in-use chunks pass.
ms_error_t check_returnable(const Chunk* c) {
  if (c == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "null chunk returned");
  if (c->state != Chunk::State::kInUse) {
    return fail(MS_ERR_INVALID_ARGUMENT, "chunk returned twice: %p is %s", (void*)c->base,
                c->state == Chunk::State::kFree ? "free" : "no longer a chunk");
  }
  return MS_OK;
}

}  // namespace

ms_error_t ChunkManager::return_chunk(Chunk* c) {
  std::lock_guard<std::mutex> guard(lock_);
  MS_DEBUG_ONLY(VerifiedOperation verified(*this);)
  if (ms_error_t err = check_returnable(c); err != MS_OK) return err;
  return_chunk_locked(c);
  return MS_OK;
}

ms_error_t ChunkManager::return_chunks(Chunk* list) {
  std::lock_guard<std::mutex> guard(lock_);
  MS_DEBUG_ONLY(VerifiedOperation verified(*this);)
  // Checked first, so that a bad chunk leaves the list untouched; the walk stops at it because
  // a free chunk's `next` belongs to a free list.
  for (Chunk* c = list; c != nullptr; c = c->next) {
    if (ms_error_t err = check_returnable(c); err != MS_OK) return err;
  }
  while (list != nullptr) {
    Chunk* next = list->next;
    list->prev = list->next = nullptr;
    return_chunk_locked(list);
    list = next;
  }
  return MS_OK;
}

void ChunkManager::verify_sometimes_locked() {
  MS_ASSERT_LOCKED(lock_);
  // Debug builds check the whole manager now and then: after max(256, chunks) calls, so the
  // cost per get or return stays constant however many chunks there are (a full check on every
  // one is quadratic in the number of chunks).
  MS_DEBUG_ONLY({
    if (++operations_since_verify_ >= std::max<size_t>(256, pool_.in_use())) {
      operations_since_verify_ = 0;
      MS_ASSERT(verify_locked(), "%s", ms_last_error_text());
    }
  })
}

void ChunkManager::return_chunk_locked(Chunk* c) {
  MS_ASSERT_LOCKED(lock_);
  MS_ASSERT(c->verify(), "%s", ms_last_error_text());
  c->set_owner(nullptr);
  c->used_bytes = 0;
  c->state = Chunk::State::kFree;
  // Before merging, while c still names its own start: free chunks record none.
  node_of(c)->chunk_starts().clear(c->base);
  if (policy_.merge) c = RootChunkArea::merge(c, geometry_, pool_, free_lists_);
  refresh_committed_locked(c);
  // A refusal leaves the chunk counted as committed; purge tries again.
  if (policy_.uncommit_on_return && c->bytes >= granule_bytes()) (void)uncommit_locked(c);
  free_lists_.add(c);
}

ms_error_t ChunkManager::ensure_committed(Chunk* c, size_t bytes) {
  std::unique_lock<std::mutex> guard(lock_, std::try_to_lock);
  if (!guard.owns_lock()) {
    guard.lock();
    contended_steps_left_ = kContendedSteps;
  } else if (contended_steps_left_ > 0) {
    contended_steps_left_--;
  }
  if (contended_steps_left_ > 0 && bytes > c->committed_bytes &&
      c->bytes >= kContendedStepMinChunkBytes) {
    // Ahead by one contended step, never past the chunk (ensure_committed_locked clamps). If the
    // step is refused (the cap, a failed commit), what was asked for is tried alone: committing
    // ahead must never turn a request that fits into a failure.
    size_t ahead = std::max(bytes, c->committed_bytes + kContendedStepBytes);
    if (ahead > bytes && ensure_committed_locked(c, ahead) == MS_OK) return MS_OK;
  }
  return ensure_committed_locked(c, bytes);
}

ms_error_t ChunkManager::ensure_committed_locked(Chunk* c, size_t bytes) {
  MS_ASSERT_LOCKED(lock_);
  size_t target = std::min(size_t{c->bytes}, align_up(bytes, granule_bytes()));
  if (target <= c->committed_bytes) return MS_OK;
  ms_error_t err = node_of(c)->ensure_committed(c->base + c->committed_bytes,
                                             target - c->committed_bytes);
  if (err != MS_OK) {
    // Granules committed before the failure stay committed and belong to the chunk.
    refresh_committed_locked(c);
    return err;
  }
  c->committed_bytes = target;
  return MS_OK;
}

void ChunkManager::refresh_committed_locked(Chunk* c) const {
  MS_ASSERT_LOCKED(lock_);
  const CommitMask& mask = node_of(c)->mask();
  size_t granule = granule_bytes();
  if (c->bytes < granule) {
    c->committed_bytes = mask.is_committed(c->base) ? c->bytes : 0;
    return;
  }
  size_t first = mask.granule_index(c->base);
  size_t n = 0;
  while (n < c->bytes / granule && mask.bit(first + n)) n++;
  c->committed_bytes = n * granule;
}

ms_error_t ChunkManager::uncommit_locked(Chunk* c) {
  MS_ASSERT_LOCKED(lock_);
  ms_error_t err = node_of(c)->uncommit(c->base, c->bytes);
  if (err == MS_OK) {
    c->committed_bytes = 0;
    return MS_OK;
  }
  // Part of the chunk may have been uncommitted before the refusal: the cached prefix must not
  // claim memory the mask no longer has (it would be handed out uncharged). What stayed
  // committed is counted as such, and the next purge tries again.
  refresh_committed_locked(c);
  return err;
}

bool ChunkManager::attempt_enlarge(Chunk* c) {
  if (!policy_.merge) return false;
  std::lock_guard<std::mutex> guard(lock_);
  if (!RootChunkArea::enlarge(c, geometry_, pool_, free_lists_)) return false;
  // A whole root area records its start apart (ChunkStartTable, "Root chunks").
  if (c->level == 0) node_of(c)->chunk_starts().set_root_start(c->base, c);
  return true;
}

// Purge costs what it returns: with nothing to return it is a short walk, and after mass deaths
// nearly all of its time is the kernel freeing pages in madvise. The walk visits only free chunks
// that held committed memory when they were filed (FreeChunkLists keeps them in front), not every
// free chunk.
void ChunkManager::purge() {
  if (!policy_.uncommit_in_purge) return;
  std::lock_guard<std::mutex> guard(lock_);
  int granule_level = geometry_.level_fitting(granule_bytes());
  std::vector<Chunk*> committed;
  for (int l = 0; l <= granule_level; l++) {
    Chunk* last = free_lists_.last_committed(l);
    for (Chunk* c = last != nullptr ? free_lists_.first(l) : nullptr; c != nullptr; c = c->next) {
      if (mask_committed_bytes(c) > 0) committed.push_back(c);
      if (c == last) break;
    }
  }
  for (Chunk* c : committed) {
    free_lists_.remove(c);
    (void)uncommit_locked(c);
    free_lists_.add(c);
  }
  remove_empty_nodes_locked();
  (void)vslist_.purge_bookkeeping();
}

void ChunkManager::remove_empty_nodes_locked() {
  MS_ASSERT_LOCKED(lock_);
  if (!vslist_.expandable()) return;
  // One pass over the areas (not one per node): free, unsplit roots per node.
  std::unordered_map<VirtualSpaceNode*, size_t> free_roots;
  for (const RootArea& a : areas_) {
    if (a.first->level == 0 && a.first->is_free()) free_roots[a.node]++;
  }
  std::unordered_set<VirtualSpaceNode*> empty;
  for (const auto& [node, roots] : free_roots) {
    if (roots != node->root_chunks_carved() || node->committed_bytes() != 0) continue;
    // Unmapped first: if the kernel refuses, the node and its free root chunks stay as they
    // are, consistent, and the next purge tries again.
    if (vslist_.remove_node(node) == MS_OK) empty.insert(node);
  }
  if (empty.empty()) return;
  for (const RootArea& a : areas_) {
    if (empty.count(a.node) == 0) continue;
    free_lists_.remove(a.first);
    pool_.release(a.first);
  }
  areas_.erase(std::remove_if(areas_.begin(), areas_.end(),
                              [&](const RootArea& a) { return empty.count(a.node) != 0; }),
               areas_.end());
}

size_t ChunkManager::mask_committed_bytes(const Chunk* c) const {
  return node_of(c)->mask().committed_bytes_in(c->base, c->bytes);
}

size_t ChunkManager::read_committed_bytes(const Chunk* c) const {
  std::lock_guard<std::mutex> guard(lock_);
  return mask_committed_bytes(c);
}

std::vector<FreeChunkLevelStats> ChunkManager::free_chunk_stats_locked() const {
  MS_ASSERT_LOCKED(lock_);
  std::vector<FreeChunkLevelStats> stats(static_cast<size_t>(geometry_.levels()));
  for (int l = 0; l < geometry_.levels(); l++) {
    FreeChunkLevelStats& s = stats[static_cast<size_t>(l)];
    for (Chunk* c = free_lists_.first(l); c != nullptr; c = c->next) {
      s.count++;
      s.bytes += c->bytes;
      s.committed_bytes += mask_committed_bytes(c);
    }
  }
  return stats;
}

bool ChunkManager::verify() const {
  std::lock_guard<std::mutex> guard(lock_);
  return verify_locked();
}

bool ChunkManager::verify_locked() const {
  MS_ASSERT_LOCKED(lock_);
  if (!pool_.verify() || !free_lists_.verify() || !vslist_.verify()) return false;
  size_t chunks = 0;
  size_t free_chunks = 0;
  size_t carved = 0;
  for (const auto& n : vslist_.nodes()) carved += n->root_chunks_carved();
  MS_VERIFY(carved == areas_.size(), "%zu root areas carved, %zu known", carved, areas_.size());
  for (const RootArea& a : areas_) {
    MS_VERIFY(a.node->contains(a.first->base), "area %p outside its node", (void*)a.first->base);
    auto buddies = policy_.merge ? RootChunkArea::FreeBuddies::kAlwaysMerged
                                 : RootChunkArea::FreeBuddies::kMayStayApart;
    if (!RootChunkArea::verify(a.first, a.node, geometry_, buddies, &chunks, &free_chunks)) {
      return false;
    }
    for (const Chunk* c = a.first; c != nullptr; c = c->next_in_area) {
      MS_VERIFY(node_of(c) == a.node, "chunk %p is not found in its area's node", (void*)c->base);
      MS_VERIFY(a.node->mask().committed_bytes_in(c->base, c->committed_bytes) ==
                    c->committed_bytes,
                "chunk %p claims %zu committed bytes the mask does not have", (void*)c->base,
                size_t{c->committed_bytes});
    }
  }
  MS_VERIFY(chunks == pool_.in_use(), "%zu chunks in areas, %zu headers in use", chunks,
            pool_.in_use());
  MS_VERIFY(free_chunks == free_lists_.count(), "%zu free chunks in areas, %zu in lists",
            free_chunks, free_lists_.count());
  return true;
}

}  // namespace metaspace
