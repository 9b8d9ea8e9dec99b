#include "arena/arena.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <metaspace/detail/bins.h>

#include "arena/owner_exclusion.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

static_assert(SpaceUsage::kOrigins == kBlockOrigins, "space counters need every block origin");

Arena::Arena(ChunkManager& manager, GrowthPolicy policy, const ArenaOptions& options)
    : manager_(manager),
      policy_(std::move(policy)),
      alignment_(options.alignment),
      head_(options.head),
      space_(static_cast<uint8_t>(options.space)),
      // The inline paths do not count: a counting arena keeps its window and bins closed.
      fast_path_(options.fast_path && !options.checked && !options.count_allocations &&
                 options.alignment <= kWordBytes),
      inline_free_(options.inline_free && fast_path_),
      checked_(options.checked),
      count_allocations_(options.count_allocations),
      wastage_(options.wastage),
      shared_(options.shared) {
  MS_ASSERT(head_ != nullptr, "an arena needs a loader head");
  if (wastage_ != nullptr) {
    wastage_->donor_ = this;
    wastage_->donor_usage_ = &manager_.usage();
  }
  __atomic_store_n(&window()->top, nullptr, __ATOMIC_RELAXED);
  __atomic_store_n(&window()->end, nullptr, __ATOMIC_RELAXED);
}

Arena::~Arena() {
  park();
  // Out of the counters before the chunks go back, so that counted bytes always lie in chunks
  // in use. The wastage arena's blocks in our chunks leave first: our class space counters are
  // then never below what still lies there (the wastage arena dies right after us).
  if (wastage_ != nullptr) wastage_->apply(Contribution{});
  apply(Contribution{});
  if (wastage_ != nullptr && wastage_->donor_ == this) wastage_->donor_ = nullptr;
  // The home chunk holds this object: it stays, and its owner returns it once we are gone.
  // It is the oldest chunk, the list's last. Its prefix leaves the overhead first.
  if (home_prefix_ != 0) {
    SpaceUsage& u = manager_.usage();
    u.begin_update();
    u.decrease(u.overhead_in_chunks_bytes, home_prefix_);
    u.end_update();
    // Unlink the last chunk: the list's head pointer if it is the only one, else its
    // predecessor's link.
    Chunk* before_last = nullptr;
    Chunk* last = chunks_;
    while (last != nullptr && last->next != nullptr) {
      before_last = last;
      last = last->next;
    }
    MS_ASSERT(last != nullptr && is_home(last), "home chunk not last in the list");
    if (before_last != nullptr) before_last->next = nullptr; else chunks_ = nullptr;
  }
  // The arena's chunks are in use by construction; a refusal would mean corrupted lists, which
  // return_chunks leaves untouched and verify() reports. A destructor has no caller to tell.
  (void)manager_.return_chunks(chunks_);
  if (inline_free_ && free_blocks_ != nullptr && free_blocks_->published()) {
    __atomic_store_n(&head_->bins, nullptr, __ATOMIC_RELAXED);
  }
  if (free_blocks_ != nullptr) manager_.bookkeeping().destroy(free_blocks_->medium());
  manager_.bookkeeping().destroy(free_blocks_);
}

bool Arena::ensure_free_blocks() {
  if (free_blocks_ != nullptr) return true;
  free_blocks_ = manager_.bookkeeping().create<FreeBlocks>();
  if (free_blocks_ == nullptr) return false;
  free_blocks_->set_foreign_range(foreign_lo_, foreign_hi_);
  free_blocks_->set_current_chunk(chunks_ != nullptr ? handed_out_base(chunks_) : nullptr);
  // The tails left in place because there was no structure to file them in are filed now that
  // there is one: this arena's own, and those of the arena that gives this one its tails.
  if (wastage_ == nullptr) file_tails_left_in_place();
  if (donor_ != nullptr && donor_->wastage_ == this) donor_->file_tails_left_in_place();
  // From now on the owner's inline ms_deallocate and reuse work on the bins (metaspace/detail/): the
  // non-class arena's through the loader head, the class arena's through owner_deallocate and
  // owner_reuse, called by the library without the loader lock.
  if (fast_path_ && OwnerExclusion::available()) {
    ms__free_bins& bins = free_blocks_->publish();
    if (inline_free_) __atomic_store_n(&head_->bins, &bins, __ATOMIC_RELAXED);
  }
  refresh_fit_max();  // the tails just filed, if any
  return true;
}

bool Arena::owner_bins_serve(size_t n) const {
  return free_blocks_ != nullptr && free_blocks_->published() && n - 1 < 1024;
}

bool Arena::owner_deallocate(void* p, size_t bytes) {
  size_t n = align_up(bytes, kWordBytes);
  if (!owner_bins_serve(n) || !is_aligned(p, kWordBytes)) return false;
  uintptr_t top = reinterpret_cast<uintptr_t>(__atomic_load_n(&window()->top, __ATOMIC_RELAXED));
  return ms__bins_push(&free_blocks_->shared_bins(), top, p, n, fit_max_slot()) != 0;
}

void* Arena::owner_reuse(size_t bytes) {
  size_t n = align_up(bytes, kWordBytes);
  if (!owner_bins_serve(n) || n > fit_max()) return nullptr;
  return ms__bins_pop(&free_blocks_->shared_bins(), n);
}

char* Arena::top() const {
  return parked_ ? top_ : __atomic_load_n(&window()->top, __ATOMIC_RELAXED);
}

void Arena::park() {
  if (parked_) return;
  top_ = window()->top;
  end_ = window()->end;
  __atomic_store_n(&window()->top, nullptr, __ATOMIC_RELAXED);
  __atomic_store_n(&window()->end, nullptr, __ATOMIC_RELAXED);
  parked_ = true;
}

void Arena::publish() {
  refresh_fit_max();
  if (!fast_path_ || chunks_ == nullptr) return;
  if (free_blocks_ != nullptr) free_blocks_->set_current_chunk(handed_out_base(chunks_));
  __atomic_store_n(&window()->top, top_, __ATOMIC_RELAXED);
  __atomic_store_n(&window()->end, end_, __ATOMIC_RELAXED);
  parked_ = false;
}

void Arena::count_allocation() {
  // Not counting, nothing at all: a count of the slow path's blocks alone would mislead.
  if (!count_allocations_) return;
  // Only the slow path writes it, under the loader's exclusion (a counting arena's window and
  // bins are closed, so no owner path runs without the lock); statistics load it.
  __atomic_store_n(&allocations_, allocations_ + 1, __ATOMIC_RELAXED);
}

void Arena::refresh_fit_max() {
  if (!fast_path_) return;
  // A free block is at most a root chunk (64 MiB at most): it fits the header's 32 bits.
  __atomic_store_n(fit_max_slot(), static_cast<uint32_t>(largest_free_block()), __ATOMIC_RELAXED);
}

ms_error_t Arena::file_salvaged(char* p, size_t bytes) {
  MS_ASSERT(!checked_ && bytes % kWordBytes == 0 && bytes > 0, "salvaged block of %zu bytes", bytes);
  if (!ensure_free_blocks()) return MS_ERR_OUT_OF_MEMORY;
  free_blocks_->add(p, bytes, BlockOrigin::kSalvaged);
  refresh_fit_max();
  fold_if_due();
  return MS_OK;
}

void* Arena::take_free_block(size_t bytes, size_t max_bytes, size_t min_whole, size_t* got) {
  MS_ASSERT(bytes % kWordBytes == 0 && max_bytes % kWordBytes == 0 && bytes <= max_bytes,
            "free block of %zu bytes, at most %zu", bytes, max_bytes);
  if (checked_ || !has_free_blocks() || wastage_target().free_blocks_ == nullptr) return nullptr;
  size_t have = 0;
  BlockOrigin origin = BlockOrigin::kDeallocated;
  char* p = static_cast<char*>(free_blocks_->take(bytes, &have, &origin));
  if (p == nullptr) return nullptr;
  size_t keep = have < min_whole ? bytes : std::min(have, max_bytes);
  if (have > keep) {
    give_away(p + keep, have - keep, origin);
    have = keep;
  }
  *got = have;
  slow_allocations_++;
  count_allocation();
  refresh_fit_max();
  fold_if_due();
  return p;
}

void* Arena::reuse(size_t bytes) {
  // Reuse touches neither top nor end, so the window stays open: only fit_max moves. (Parking
  // and publishing the window around it was a quarter of a reuse's cost.)
  if (checked_ || !has_free_blocks() || wastage_target().free_blocks_ == nullptr) return nullptr;
  void* p = allocate_from_free_blocks(align_up(bytes, kWordBytes));
  if (p == nullptr) return nullptr;
  slow_allocations_++;
  count_allocation();
  refresh_fit_max();
  fold_if_due();
  return p;
}

void Arena::adopt_home_chunk(Chunk* c, size_t prefix_bytes) {
  MS_ASSERT(chunks_ == nullptr && chunk_count_ == 0 && home_prefix_ == 0 && !checked_,
            "home chunk for an arena that has chunks, or a checked one");
  MS_ASSERT(prefix_bytes > 0 && prefix_bytes % 16 == 0 && prefix_bytes <= UINT16_MAX &&
                prefix_bytes <= c->committed_bytes && c->base <= reinterpret_cast<char*>(this) &&
                reinterpret_cast<char*>(this + 1) <= c->base + prefix_bytes,
            "home prefix of %zu bytes at %p does not hold the arena %p", prefix_bytes,
            (void*)c->base, (void*)this);
  home_prefix_ = static_cast<uint16_t>(prefix_bytes);
  // Overhead from now until the destructor, before the chunk goes back (counted bytes always
  // lie in chunks in use); never part of the folded contribution, so used never holds it.
  SpaceUsage& u = manager_.usage();
  u.begin_update();
  u.increase(u.overhead_in_chunks_bytes, prefix_bytes);
  u.end_update();
  c->set_owner(this);
  c->next = nullptr;
  chunks_ = c;
  chunk_count_ = 1;
  top_ = c->base + prefix_bytes;
  end_ = c->base + c->committed_bytes;
}

Chunk* Arena::home_chunk() const {
  if (home_prefix_ == 0) return nullptr;
  Chunk* c = chunks_;
  while (c != nullptr && c->next != nullptr) c = c->next;
  return c;
}

void* Arena::allocate(size_t bytes) {
  if (void* p = reuse(bytes)) return p;
  park();
  slow_allocations_++;
  size_t n = align_up(bytes, kWordBytes);
  size_t total = checked_ ? n + Fence::kBytes : n;
  char* p = nullptr;
  if (has_free_blocks()) {
    // A split block's rest goes to the wastage arena, which must have room to file it.
    if (!wastage_target().ensure_free_blocks()) {
      publish();
      return nullptr;
    }
    p = static_cast<char*>(allocate_from_free_blocks(total));
    if (condemned_) {  // just now: the overwrite is this call's error
      publish();
      return nullptr;
    }
  }
  if (p == nullptr) p = static_cast<char*>(allocate_from_chunks(total));
  if (p != nullptr) {
    if (checked_) install_fence(p, n, n - bytes);
    count_allocation();
  }
  publish();
  fold_if_due();
  return p;
}

size_t Arena::consumed_without_prefix() const {
  // The home prefix (adopt_home_chunk) is overhead, counted apart for the arena's whole life.
  return retired_consumed_ +
         (chunks_ != nullptr ? static_cast<size_t>(top() - chunks_->base) : 0) - home_prefix_;
}

Arena::Contribution Arena::contribution() const {
  Contribution c;
  c.consumed = consumed_without_prefix();
  if (free_blocks_ != nullptr) {
    FreeBlocks::Totals t = free_blocks_->totals();
    for (int w = 0; w < 2; w++) {
      for (int o = 0; o < kBlockOrigins; o++) c.free_bytes[w][o] = t.bytes_by[o][w];
    }
    c.free_count = t.count;
  }
  // Unfiled tails lie in this arena's own chunks: salvaged waste, not free blocks (no count).
  c.free_bytes[0][static_cast<int>(BlockOrigin::kSalvaged)] += unfiled_tail_bytes_;
  c.fence_bytes[1] = foreign_fence_count_ * Fence::kBytes;
  c.fence_bytes[0] = fences_.count * Fence::kBytes - c.fence_bytes[1];
  return c;
}

SpaceUsage& Arena::foreign_usage() const {
  // Only an arena that receives a donor's gaps holds blocks in the other space.
  return donor_usage_ != nullptr ? *donor_usage_ : manager_.usage();
}

bool Arena::Contribution::operator==(const Contribution& o) const {
  return std::memcmp(this, &o, sizeof o) == 0;
}

void Arena::apply(const Contribution& now) {
  folded_chunks_ = chunk_count_;
  if (free_blocks_ != nullptr) free_blocks_->reset_moved_bytes();
  if (now == folded_) return;  // the common case of a statistics visit: no atomics at all
  SpaceUsage& own = manager_.usage();
  SpaceUsage& foreign = foreign_usage();
  own.begin_update();
  if (&foreign != &own) foreign.begin_update();
  const Contribution& was = folded_;
  // used = consumed - free blocks - fences, per space where the bytes lie, as one add each.
  constexpr BlockWhere kOwn = BlockWhere::kOwnSpace, kOther = BlockWhere::kOtherSpace;
  size_t own_used_was = was.consumed - was.free_bytes_lying(kOwn) - was.fence_bytes[0];
  size_t own_used_now = now.consumed - now.free_bytes_lying(kOwn) - now.fence_bytes[0];
  size_t foreign_was = was.free_bytes_lying(kOther) + was.fence_bytes[1];
  size_t foreign_now = now.free_bytes_lying(kOther) + now.fence_bytes[1];
  own.add(own.used_bytes, own_used_was, own_used_now);
  // Blocks in the other space were counted as used there by the donor when it bumped them.
  foreign.add(foreign.used_bytes, foreign_now, foreign_was);
  for (int o = 0; o < kBlockOrigins; o++) {
    own.add(own.free_block_bytes[o], was.free_bytes[0][o], now.free_bytes[0][o]);
    foreign.add(foreign.free_block_bytes[o], was.free_bytes[1][o], now.free_bytes[1][o]);
  }
  own.add(own.fence_bytes, was.fence_bytes[0], now.fence_bytes[0]);
  foreign.add(foreign.fence_bytes, was.fence_bytes[1], now.fence_bytes[1]);
  own.add(own.free_block_count, was.free_count, now.free_count);
  folded_ = now;
  if (&foreign != &own) foreign.end_update();
  own.end_update();
}

void Arena::fold(const Contribution& now) {
  // Blocks lying in the donor's chunks were counted as used there when the donor bumped over
  // them; the donor folds first, so taking them out here never takes a counter below zero.
  if (donor_ != nullptr && !same_foreign(now, folded_)) donor_->apply(donor_->contribution());
  apply(now);
}

void Arena::fold_usage() { fold(contribution()); }

void Arena::fold_if_due() {
  // Folding costs about five atomic read-modify-writes on counters every thread shares, several
  // times a bare free's work. So a slow-path call folds when a chunk changed hands or the arena
  // moved by kFoldSlackBytes since its last fold; statistics visits fold whatever is left, so
  // ms_get_usage may be off by less than that per active loader. The test is an upper bound of the
  // distance to the last fold, from running totals (bytes filed and taken, bumped, fences), so it
  // needs no contribution: recomputing and comparing that on every call would be a sizeable part of
  // a free. Churn that nets out folds early, which is harmless.
  if (chunk_count_ == folded_chunks_) {
    size_t moved = free_blocks_ != nullptr ? free_blocks_->moved_bytes() : 0;
    size_t consumed = consumed_without_prefix();
    size_t bumped = consumed > folded_.consumed ? consumed - folded_.consumed
                                                : folded_.consumed - consumed;
    size_t fences =
        fences_.count * Fence::kBytes - folded_.fence_bytes[0] - folded_.fence_bytes[1];
    if (moved + bumped + fences < kFoldSlackBytes) return;
  }
  fold(contribution());
}

bool Arena::same_foreign(const Contribution& a, const Contribution& b) {
  for (int o = 0; o < kBlockOrigins; o++) {
    if (a.free_bytes[1][o] != b.free_bytes[1][o]) return false;
  }
  return a.fence_bytes[1] == b.fence_bytes[1];
}

void* Arena::allocate_from_free_blocks(size_t bytes) {
  size_t got = 0;
  BlockOrigin origin;
  char* p;
  if (checked_) {
    bool damaged = false;
    p = static_cast<char*>(
        free_blocks_->take_checked(bytes, handed_out_bounds(SIZE_MAX), !shared_, &got, &origin,
                                   &damaged));
    if (damaged) {
      condemned_ = true;
      return nullptr;
    }
  } else {
    p = static_cast<char*>(free_blocks_->take(bytes, &got, &origin));
  }
  if (p == nullptr) return nullptr;
  if (got > bytes) {
    // The rest of a freed block is checked for the zap pattern when it is taken in turn, behind
    // its own list header: what was this block's tree node (or link) is zapped again first.
    if (checked_ && origin == BlockOrigin::kDeallocated) {
      std::memset(p + bytes, Fence::kZapFreed, std::min(got - bytes, BlockTree::kNodeBytes));
    }
    give_away(p + bytes, got - bytes, origin);
  }
  return p;
}

void Arena::give_away(char* p, size_t bytes, BlockOrigin origin) {
  if (wastage_ != nullptr) {
    wastage_->add_wastage(p, bytes, origin);
  } else if (!condemned_) {  // as add_wastage
    MS_ASSERT(free_blocks_ != nullptr, "wastage before the free blocks were made");
    free_blocks_->add(p, bytes, origin);
  }
}

void Arena::add_wastage(char* p, size_t bytes, BlockOrigin origin) {
  // Into lists that are not trusted any more nothing is filed: the bytes stay handed out.
  if (condemned_) return;
  MS_ASSERT(free_blocks_ != nullptr, "wastage before the free blocks were made");
  free_blocks_->add(p, bytes, origin);
  refresh_fit_max();
}

void* Arena::allocate_from_chunks(size_t bytes) {
  // A large alignment rounds the block up; the gap behind it goes to the wastage arena, so the
  // next block starts aligned and the gap is not lost.
  size_t need = align_up(bytes, alignment_);
  if (need > bytes && !wastage_target().ensure_free_blocks()) return nullptr;
  char* p = nullptr;
  Bump result = bump_current(need, &p);
  if (result == Bump::kFailed) return nullptr;
  if (result == Bump::kNoRoom) {
    Chunk* c = chunks_;
    int next_level = policy_.level_at(chunk_count_);
    // Grow in place only up to what the policy would hand out next anyway: micro loaders stay
    // small, and a request that does not fit a doubled chunk gets a chunk of its own. The home
    // chunk (adopt_home_chunk) doubles beyond that for as long as it is the arena's only chunk
    // and its buddy is free: its prefix took room the loader's blocks had without it, and would
    // shift every later block by as much (many-loaders: 46 of its 159 standard loaders end
    // 56-250 bytes below a 4 KiB multiple). Replayed, worst (median) footprint/live of
    // many-loaders: 1.0492 (1.0308) with the arenas in the slab, 1.0503 (1.0336) in the chunk
    // without this rule, 1.0497 (1.0330) doubling once, 1.0487 (1.0320) with it; interleave
    // 1.0838 in all three. (The same rule for slab-made arenas: many-loaders 1.0487 (1.0296),
    // interleave 1.1021 instead of 1.1004.)
    bool home_grows = chunk_count_ == 1 && c != nullptr && is_home(c);
    bool enlarged = c != nullptr && (c->level - 1 >= next_level || home_grows) &&
                    static_cast<size_t>(top_ - c->base) + need <= 2 * c->bytes &&
                    manager_.attempt_enlarge(c);
    if (!enlarged && !new_chunk(need)) return nullptr;
    if (bump_current(need, &p) != Bump::kDone) return nullptr;
  }
  if (need > bytes) give_away(p + bytes, need - bytes, BlockOrigin::kAlignmentGap);
  return p;
}

Arena::Bump Arena::bump_current(size_t bytes, char** out) {
  Chunk* c = chunks_;
  if (c == nullptr || bytes > static_cast<size_t>(c->end() - top_)) return Bump::kNoRoom;
  if (bytes > static_cast<size_t>(end_ - top_)) {
    ms_error_t err =
        manager_.ensure_committed(c, static_cast<size_t>(top_ - c->base) + bytes);
    end_ = c->base + c->committed_bytes;
    if (err != MS_OK) return Bump::kFailed;
  }
  *out = top_;
  top_ += bytes;
  return Bump::kDone;
}

bool Arena::new_chunk(size_t bytes) {
  const ChunkGeometry& geometry = manager_.geometry();
  int fit = geometry.level_fitting(bytes);
  int preferred = std::min(policy_.level_at(chunk_count_), fit);
  // The retired chunk's committed tail becomes a free block (room to file it first), or stays.
  size_t tail =
      chunks_ != nullptr ? static_cast<size_t>(chunks_->base + chunks_->committed_bytes - top_) : 0;
  bool file = tail > 0 && files_tail(tail);
  if (file && !wastage_target().ensure_free_blocks()) return false;
  Chunk* c = manager_.get_chunk(preferred, fit, bytes);
  if (c == nullptr) return false;
  if (chunks_ != nullptr) salvage(chunks_, top_, file);
  c->set_owner(this);
  c->next = chunks_;
  chunks_ = c;
  chunk_count_++;
  top_ = c->base;
  end_ = c->base + c->committed_bytes;
  return true;
}

bool Arena::files_tail(size_t tail) {
  // Checked mode files every tail, as before: its free blocks are where fences are checked.
  return checked_ || tail >= kSmallestTailWorthFiling ||
         wastage_target().free_blocks_ != nullptr ||
         tail > UINT32_MAX - unfiled_tail_bytes_;
}

void Arena::file_tails_left_in_place() {
  if (unfiled_tail_bytes_ == 0) return;
  for (Chunk* c = chunks_ != nullptr ? static_cast<Chunk*>(chunks_->next) : nullptr; c != nullptr;
       c = c->next) {
    if (c->used_bytes == c->committed_bytes) continue;
    give_away(c->base + c->used_bytes, c->committed_bytes - c->used_bytes, BlockOrigin::kSalvaged);
    unfiled_tail_bytes_ -= c->committed_bytes - c->used_bytes;
    c->used_bytes = c->committed_bytes;
  }
  MS_ASSERT(unfiled_tail_bytes_ == 0, "%zu bytes of tails left in place not found",
            size_t{unfiled_tail_bytes_});
}

void Arena::salvage(Chunk* c, char* top, bool file) {
  char* committed_end = c->base + c->committed_bytes;
  MS_ASSERT(top <= committed_end, "top %p beyond the committed end %p", (void*)top,
            (void*)committed_end);
  size_t tail = static_cast<size_t>(committed_end - top);
  // A filed tail is handed out (to the free blocks): the chunk's used part ends at the committed
  // end. A tail left in place never is: used ends at top, so owns() and the inline free's range
  // leave it out, and the tail is counted apart, as salvaged waste (contribution, stats_locked).
  c->used_bytes = static_cast<size_t>((file ? committed_end : top) - c->base);
  if (tail > 0 && file) give_away(top, tail, BlockOrigin::kSalvaged);
  if (!file) unfiled_tail_bytes_ += static_cast<uint32_t>(tail);
  retired_consumed_ += tail + static_cast<size_t>(top - c->base);
}

void Arena::install_fence(char* block, size_t bytes, size_t slack) {
  Fence* f = fences_.install(block, bytes, slack);
  if (foreign(f)) foreign_fence_count_++;
}

ms_error_t Arena::deallocate(void* p, size_t bytes) {
  if (!checked_) {
    // A free touches neither top nor end: the window stays open and only fit_max may grow.
    if (!ensure_free_blocks()) return MS_ERR_OUT_OF_MEMORY;
    size_t n = align_up(bytes, kWordBytes);
    // The medium bins come with the first premature free of their sizes (salvaged tails alone
    // stay in the tree: most loaders never free). Without them the tree serves all the same.
    if (free_blocks_->wants_medium(n)) {
      if (MediumBins* m = manager_.bookkeeping().create<MediumBins>()) free_blocks_->attach_medium(m);
    }
    free_blocks_->add(p, n);
    refresh_fit_max();
    fold_if_due();
    return MS_OK;
  }
  park();
  ms_error_t result = deallocate_parked(p, bytes);
  publish();
  fold_if_due();
  return result;
}

ms_error_t Arena::deallocate_parked(void* p, size_t bytes) {
  size_t n = align_up(bytes, kWordBytes);
  if (checked_) {
    if (!handed_out(p, n + Fence::kBytes)) {
      return fail(MS_ERR_NOT_OWNED, "block %p (%zu bytes) and its fence are not in this arena",
                  p, bytes);
    }
    if (ms_error_t e = FenceList::check_free(this, p, n); e != MS_OK) return e;
  }
  if (condemned_) {
    // Freed (a second free is still recognised) but not filed: the lists are not trusted.
    FenceList::mark_freed(p, n);
    return MS_OK;
  }
  if (!ensure_free_blocks()) return MS_ERR_OUT_OF_MEMORY;
  if (checked_) FenceList::mark_freed(p, n);
  free_blocks_->add(p, n);
  return MS_OK;
}

ms_error_t Arena::check_fences() const {
  return fences_.check(this, [this](const void* p, size_t bytes) { return handed_out(p, bytes); });
}

void Arena::zap() {
  for (Chunk* c = chunks_; c != nullptr; c = c->next) {
    char* used_end = c == chunks_ ? top() : c->base + c->used_bytes;
    char* from = handed_out_base(c);
    std::memset(from, Fence::kZapDead, static_cast<size_t>(used_end - from));
  }
}

bool Arena::owns(const void* p, size_t bytes, bool note_hint) const {
  // O(1) whatever the arena's number of chunks (no walk of the chunk list): the chunk that holds p,
  // which is ours only if it says so. Its fields are then ours to read. The current chunk and the
  // retired chunk of the last hit are checked first (frees cluster): no table lookup. A retired
  // chunk stays ours, unchanged, until the arena dies.
  const Chunk* c = chunks_;
  if (c == nullptr || !c->contains(p)) {
    c = free_blocks_ != nullptr ? static_cast<const Chunk*>(free_blocks_->chunk_hint()) : nullptr;
    if (c == nullptr || !c->contains(p)) {
      c = manager_.chunk_containing(p);
      if (c == nullptr || !c->owner_is(this)) return false;
      if (note_hint && free_blocks_ != nullptr) {
        free_blocks_->set_chunk_hint(c, handed_out_base(c), c->base + c->used_bytes);
      }
    }
  }
  const char* start = static_cast<const char*>(p);
  const char* used_end = c == chunks_ ? top() : c->base + c->used_bytes;
  // Nothing in the home prefix was handed out: the arena object itself lies there.
  return start >= handed_out_base(c) && start < used_end &&
         bytes <= static_cast<size_t>(used_end - start);
}

size_t Arena::handed_out_bytes() const {
  size_t total = 0;
  const Arena* arenas[2] = {this, donor_};
  for (const Arena* a : arenas) {
    if (a == nullptr) continue;
    for (const Chunk* c = a->chunks_; c != nullptr; c = c->next) {
      total += c == a->chunks_ ? static_cast<size_t>(a->top() - c->base) : c->used_bytes;
      if (a->is_home(c)) total -= a->home_prefix_;
    }
  }
  return total;
}

bool Arena::handed_out(const void* p, size_t bytes) const {
  return owns(p, bytes) || (donor_ != nullptr && donor_->owns(p, bytes));
}

ArenaStats Arena::stats_locked() const {
  MS_ASSERT_LOCKED(manager_.lock());
  ArenaStats s;
  s.home_prefix_bytes = home_prefix_;
  s.fence_bytes = fences_.count * Fence::kBytes;
  s.foreign_fence_bytes = foreign_fence_count_ * Fence::kBytes;
  if (free_blocks_ != nullptr) {
    FreeBlocks::Totals t = free_blocks_->totals();
    s.free_blocks_bytes = t.bytes;
    s.free_blocks_count = t.count;
    for (int w = 0; w < 2; w++) {
      for (int o = 0; o < kBlockOrigins; o++) {
        s.free_bytes_by_where_origin[w][o] = t.bytes_by[o][w];
        if (w == 1) s.foreign_free_bytes += t.bytes_by[o][w];
      }
    }
  }
  for (const Chunk* c = chunks_; c != nullptr; c = c->next) {
    s.chunks++;
    s.capacity_bytes += c->bytes;
    s.committed_bytes += manager_.mask_committed_bytes(c);
    s.consumed_bytes += c == chunks_ ? static_cast<size_t>(top() - c->base) : c->used_bytes;
    s.chunks_by_level[c->level]++;
  }
  // Tails left in place: consumed (the chunks' used_bytes leave them out) and salvaged waste in
  // the arena's own space, as contribution() counts them; not blocks.
  s.unfiled_tail_bytes = unfiled_tail_bytes_;
  s.consumed_bytes += unfiled_tail_bytes_;
  s.free_blocks_bytes += unfiled_tail_bytes_;
  s.free_bytes_by_where_origin[0][static_cast<int>(BlockOrigin::kSalvaged)] += unfiled_tail_bytes_;
  return s;
}

BlockBounds Arena::handed_out_bounds(size_t max_blocks) const {
  return BlockBounds{[](const void* arena, const void* p, size_t bytes) {
                       return static_cast<const Arena*>(arena)->handed_out(p, bytes);
                     },
                     this, max_blocks};
}

bool Arena::verify() const {
  if (!verify_state()) return false;
  // Everything else checked first: the lists were found overwritten, not the accounting.
  if (condemned_) {
    fail(MS_ERR_OVERWRITE, "arena %p: an allocation found a free block written after it was "
         "freed (its error said where); freed blocks are no longer reused", (const void*)this);
    return false;
  }
  return true;
}

bool Arena::verify_state() const {
  MS_VERIFY(fast_path_ || __atomic_load_n(fit_max_slot(), __ATOMIC_RELAXED) == 0,
            "the head's fit_max of an arena whose window never opens is %u, not 0",
            (unsigned)__atomic_load_n(fit_max_slot(), __ATOMIC_RELAXED));
  // Free blocks are read only where this arena (or its donor) handed memory out: a freed block
  // the runtime wrote over is reported, not followed. In checked mode that is an overwrite.
  BlockBounds bounds = handed_out_bounds(handed_out_bytes() / kWordBytes + 1);
  // The owner's inline paths stay out of the bins while they are read (owner_exclusion.hpp).
  std::optional<OwnerExclusion> exclusion;
  if (free_blocks_ != nullptr && free_blocks_->published()) {
    exclusion.emplace(free_blocks_->shared_bins());
  }
  if (free_blocks_ != nullptr && !free_blocks_->verify(bounds)) {
    if (checked_) {
      std::string why = ms_last_error_text();
      size_t skip = why.find(": ") != std::string::npos ? why.find(": ") + 2 : 0;
      fail(MS_ERR_OVERWRITE, "arena %p: free blocks overwritten: %s", (const void*)this,
           why.c_str() + skip);
    }
    return false;
  }
  if (checked_ && check_fences() != MS_OK) return false;
  size_t n = 0;
  size_t retired_consumed = 0, tails_in_place = 0;
  for (const Chunk* c = chunks_; c != nullptr; c = c->next) {
    MS_VERIFY(c->state == Chunk::State::kInUse, "arena chunk %p is not in use", (void*)c->base);
    MS_VERIFY(c->owner_is(this), "arena chunk %p names another owner", (void*)c->base);
    // used_bytes belongs to the arena (written under the loader lock), so it is checked here.
    MS_VERIFY(c == chunks_ || c->used_bytes <= c->committed_bytes,
              "retired chunk %p uses %zu bytes but has %zu committed", (void*)c->base,
              size_t{c->used_bytes}, size_t{c->committed_bytes});
    // A retired chunk's committed part not used is its tail left in place (salvage).
    if (c != chunks_) {
      retired_consumed += c->committed_bytes;
      tails_in_place += c->committed_bytes - c->used_bytes;
    }
    n++;
  }
  MS_VERIFY(n == chunk_count_, "arena lists %zu chunks, counted %zu", n, chunk_count_);
  MS_VERIFY(tails_in_place == unfiled_tail_bytes_ && retired_consumed == retired_consumed_ &&
                (!checked_ || unfiled_tail_bytes_ == 0),
            "arena %p: retired chunks hold %zu bytes (tails left in place %zu), counted %zu "
            "(%zu)%s", (const void*)this, retired_consumed, tails_in_place, retired_consumed_,
            size_t{unfiled_tail_bytes_}, checked_ ? " in checked mode" : "");
  if (home_prefix_ != 0) {
    // The home chunk: the oldest (the list's last), holding this object within its prefix, and
    // consumed at least up to the prefix's end.
    const Chunk* home = home_chunk();
    MS_VERIFY(home != nullptr && is_home(home) &&
                  reinterpret_cast<const char*>(this + 1) <= home->base + home_prefix_,
              "arena %p: its home chunk is not its oldest chunk, or does not hold it",
              (const void*)this);
    size_t consumed = home == chunks_ ? static_cast<size_t>(top() - home->base) : home->used_bytes;
    MS_VERIFY(consumed >= home_prefix_ && home->committed_bytes >= home_prefix_,
              "arena %p: home chunk %p consumed %zu (committed %zu) of a %zu-byte prefix",
              (const void*)this, (void*)home->base, consumed, size_t{home->committed_bytes},
              size_t{home_prefix_});
  }
  if (chunks_ == nullptr) {
    MS_VERIFY(parked_, "arena without chunks has a live window");
    return true;
  }
  const Chunk* c = chunks_;
  char* t = top();
  char* e = parked_ ? end_ : __atomic_load_n(&window()->end, __ATOMIC_RELAXED);
  MS_VERIFY(t >= c->base && t <= e && e <= c->base + c->committed_bytes,
            "arena bump state [%p, %p) outside the committed part of chunk %p", (void*)t,
            (void*)e, (void*)c->base);
  MS_VERIFY(is_aligned(t, alignment_), "arena top %p not aligned to %zu", (void*)t, alignment_);
  // An inline reuse may leave fit_max above the largest block (it never lowers it): that only
  // sends requests to the slow path, which brings it down again.
  MS_VERIFY(parked_ || fit_max() >= largest_free_block(),
            "fast path would bypass a free block that fits");
  return true;
}

}  // namespace metaspace
