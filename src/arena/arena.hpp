// An arena: the memory of one loader in one space. Blocks are bumped off the current chunk; the
// bump state (top, end) lives in a window the public header can reach, so the fast path inlines
// into the runtime and is a handful of instructions (ms__allocate_inline in
// metaspace/detail/fast_path.h).
//
// Everything else happens here, out of line, with the owning loader's lock held:
//   free blocks first (best fit) → current chunk (committing granules on demand) → enlarge the
//   current chunk in place → retire it (its committed tail becomes a free block, unless it is
//   too small to pay for the free-block structure it would need: then it stays in place, as
//   waste) and take a new chunk whose size comes from the growth policy.
//
// The window also carries the size of the largest free block: requests up to it take the slow
// path, so that free blocks are reused best fit first, and the rest stay on the fast path even
// while small salvaged tails wait. In checked mode, while allocations are counted, for loaders
// shared between threads and for class arenas with an alignment above 8 bytes the window is
// closed (NULL/NULL): top and end are parked here.
//
//   chunks_ ─► [current: used | free ...end]  ─► [retired] ─► [retired] ─► null
#pragma once

#include <metaspace/detail/loader_head.h>

#include <cstddef>

#include "arena/fence.hpp"
#include "arena/free_blocks.hpp"
#include "arena/growth_policy.hpp"
#include "chunks/chunk.hpp"
#include "chunks/chunk_manager.hpp"

namespace metaspace {

// Where a free block lies, seen from the arena that holds it.
enum class BlockWhere : int { kOwnSpace = 0, kOtherSpace = 1 };

struct ArenaStats {
  size_t chunks = 0;
  size_t capacity_bytes = 0;       // sum of chunk sizes
  size_t committed_bytes = 0;      // per commit mask, within the chunks
  size_t consumed_bytes = 0;       // bumped off chunks (live + free blocks + unfiled tails)
  // Free blocks, and the unfiled tails of retired chunks (counted as salvaged bytes lying in the
  // arena's own space, but not as blocks: free_blocks_count leaves them out).
  size_t free_blocks_bytes = 0;
  size_t free_blocks_count = 0;
  size_t unfiled_tail_bytes = 0;   // retired chunks' committed tails left in place (new_chunk)
  size_t fence_bytes = 0;          // checked mode: fences behind blocks (live and freed)
  size_t foreign_free_bytes = 0;   // free blocks that lie in the other space
  size_t foreign_fence_bytes = 0;  // fences (of blocks taken from wastage) in the other space
  // The owner's bookkeeping at the start of the arena's first chunk (adopt_home_chunk): part of
  // consumed_bytes (which counts from chunk bases), not handed out. Counted as overhead.
  size_t home_prefix_bytes = 0;
  size_t chunks_by_level[kMaxLevels] = {};

  // Free block bytes by where they lie (the arena's own space or the other one) and by origin.
  size_t free_bytes(BlockWhere where, BlockOrigin origin) const {
    return free_bytes_by_where_origin[static_cast<int>(where)][static_cast<int>(origin)];
  }
  size_t free_bytes_by_where_origin[2][kBlockOrigins] = {};  // [BlockWhere][BlockOrigin]
};

// What an arena is made with. `alignment`: block alignment, a power of 2 from 8 to 1 KiB.
// `head`, `space`: the fast-path state is head->bump[space] and head->fit_max[space] (the
// loader's public head). `fast_path`: the window may be opened (also needs alignment 8, no
// checking and no counting). `inline_free`: with the fast path, the exact-size bins are published in head->bins
// for the inline ms_deallocate and reuse (one arena per head: the non-class one). `wastage`: where alignment gaps and salvaged
// tails go that this arena cannot use itself (class arenas hand them to their loader's non-class
// arena); null keeps them here. `checked`: fences, zapping and double-free detection (see
// fence.hpp); no fast path. `count_allocations`: every block handed out is counted
// (allocations()); the inline paths do not count, so no fast path either.
struct ArenaOptions {
  size_t alignment = kWordBytes;
  ms__loader_head* head = nullptr;
  ms_space_t space = MS_SPACE_NONCLASS;
  bool fast_path = false;
  bool inline_free = false;
  class Arena* wastage = nullptr;
  bool checked = false;
  bool count_allocations = false;
  // Other threads allocate from the same loader (MS_LOADER_SHARED) and write their blocks while
  // this arena is locked: checked mode then reads no byte past a free block that may be theirs.
  bool shared = false;
};

class Arena {
 public:
  // `options.head` must be set.
  Arena(ChunkManager& manager, GrowthPolicy policy, const ArenaOptions& options);
  // Returns every chunk to the chunk manager at once, except the chunk that holds this arena
  // (adopt_home_chunk): its owner returns that one after the arena is gone (home_chunk()).
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // The slow path. `bytes` is 1 .. root chunk size (the loader checks); null with error set.
  void* allocate(size_t bytes);
  // Makes `c` (in use, just taken, this arena's first chunk) the arena's current chunk with its
  // first `prefix_bytes` (a multiple of 16) already consumed: the arena object and whatever
  // holds it live there (loader/loader_arenas.hpp). Those bytes count as overhead, not used;
  // the arena never hands them out, files them or returns the chunk (its owner does, after the
  // arena's destruction). Only in a fresh arena, not in checked mode.
  void adopt_home_chunk(Chunk* c, size_t prefix_bytes);
  // The chunk adopt_home_chunk gave (the oldest of the list), or null.
  Chunk* home_chunk() const;
  size_t home_prefix_bytes() const { return home_prefix_; }
  // Files a block handed out by this loader for reuse. In checked mode the block's fence is
  // checked first: MS_ERR_DOUBLE_FREE or MS_ERR_OVERWRITE, and the block is not filed.
  ms_error_t deallocate(void* p, size_t bytes);
  // Checked mode: all fences intact? MS_OK, or the first broken one reported as an error.
  ms_error_t check_fences() const;
  // Checked mode, before destruction: fills the memory handed out so far with a pattern.
  void zap();
  // Takes a block of memory this arena may hand out (gaps and tails from a sibling arena).
  void add_wastage(char* p, size_t bytes, BlockOrigin origin);
  // Files the unused rest of a block this arena handed out (a shared loader's retired window,
  // loader/shared_windows.hpp) as a salvaged free block. Not in checked mode.
  ms_error_t file_salvaged(char* p, size_t bytes);
  // Makes what file_salvaged needs, so that a caller can fail before it changes anything; false
  // with MS_ERR_OUT_OF_MEMORY recorded.
  bool prepare_salvage() { return ensure_free_blocks(); }
  // A shared loader's next window from the free blocks: the one that fits `bytes` best, whole up
  // to `max_bytes` (beyond that it is split and the rest filed again), or split to `bytes` if it
  // is smaller than `min_whole`; its size in *got. Null if none fits, or in checked mode.
  // Counted as one allocation.
  void* take_free_block(size_t bytes, size_t max_bytes, size_t min_whole, size_t* got);
  // Requests up to it go where best fit is: the largest free block's size as last published in
  // the head, for an arena whose window may open (readable from any thread); computed under the
  // loader's exclusion for one whose window never opens (a shared loader's, checked or counting
  // mode), whose slot in the head stays 0 (refresh_fit_max).
  size_t fit_max() const {
    return fast_path_ ? __atomic_load_n(fit_max_slot(), __ATOMIC_RELAXED) : largest_free_block();
  }

  // The owner's path without the loader lock for an arena whose bins are published but that the
  // header's inline paths do not serve (the class arena of a loader that is not shared): the
  // same push and pop as the inline ms_deallocate and reuse (metaspace/detail/bins.h, ms__bins_push/pop),
  // under the same exclusion from readers. False / null: take the locked path. Only the thread
  // that may call the loader (one at a time) may call these.
  bool owner_deallocate(void* p, size_t bytes);
  void* owner_reuse(size_t bytes);
  // True if [p, p + bytes) lies within the part of one of this arena's chunks handed out so far.
  // `note_hint`: remember a retired chunk found by lookup as the next hint (and as the range the
  // inline ms_deallocate files in). Only the owner's free may: the inline path reads that range
  // without any lock, so readers (verify) must not move it.
  bool owns(const void* p, size_t bytes, bool note_hint = false) const;
  size_t alignment() const { return alignment_; }
  // The largest request an arena of a space with root chunks of `root_bytes` can serve: block
  // and (checked mode) fence share one chunk.
  static size_t largest_request(size_t root_bytes, bool checked) {
    return checked ? root_bytes - Fence::kBytes : root_bytes;
  }
  // Free blocks inside [lo, hi) are counted apart (class space gaps given to a non-class arena).
  void set_foreign_range(const char* lo, const char* hi) {
    foreign_lo_ = lo;
    foreign_hi_ = hi;
  }
  // Null until the arena first frees something, or files a tail or gap.
  const FreeBlocks* free_blocks() const { return free_blocks_; }
  // Committed tails of retired chunks left in place (new_chunk): never handed out, counted as
  // salvaged waste.
  size_t unfiled_tail_bytes() const { return unfiled_tail_bytes_; }
  // A retired chunk's committed tail below this is left in place, as waste, while the arena that
  // would file it (the wastage target) has no free-block structure; the first structure made
  // later files them all (file_tails_left_in_place). Making one to file a small tail costs a
  // 672-byte slab slot (FreeBlocks), the natural break-even, for a block later requests reuse
  // only in part, and most standard loaders never free anything else. 1 KiB lies on the plateau
  // (896 to 1 152 bytes) that gave the lowest worst footprint/live over the lab's 18 traces;
  // docs/bookkeeping.md ("Small chunk tails stay in place") has the table.
  static constexpr size_t kSmallestTailWorthFiling = 1024;

  // Caller holds the loader lock and the chunk manager's lock.
  ArenaStats stats_locked() const;
  // Adds what changed since the last fold to the space counters (SpaceUsage). Slow-path calls
  // fold when a chunk changed hands or enough changed (fold_if_due); statistics visiting the
  // loader fold everything. Caller holds the loader lock.
  void fold_usage();
  uint64_t slow_allocations() const { return slow_allocations_; }
  // Blocks handed out, with options.count_allocations (else 0). Written by the slow path under
  // the loader's exclusion; read by statistics under the loader lock.
  uint64_t allocations() const { return __atomic_load_n(&allocations_, __ATOMIC_RELAXED); }
  bool verify() const;

 private:
  bool verify_state() const;  // verify() but for a condemned arena's report
  char* top() const;
  void park();     // window → top_/end_
  void publish();  // top_/end_ → window, if the fast path may serve
  void* allocate_from_free_blocks(size_t bytes);
  // The slow path's first resort without parking the window: best fit from the free blocks, or
  // null (none fits, or checked mode, which has its own path).
  void* reuse(size_t bytes);
  void count_allocation();
  // Sets the head's fit_max to the largest free block, for an arena whose window may open. Others
  // leave it 0: the inline ms_allocate tests fit_max before the window, and a value amid a size
  // mix makes that test a branch the CPU misses on every other request of a shared loader; at 0
  // it passes every time and the closed window's room test fails every time.
  void refresh_fit_max();
  void* allocate_from_chunks(size_t bytes);
  enum class Bump { kDone, kNoRoom, kFailed };
  Bump bump_current(size_t bytes, char** out);
  bool new_chunk(size_t bytes);
  // Whether a retired chunk's committed tail of `tail` bytes is filed as a free block (else it
  // stays in place: kSmallestTailWorthFiling).
  bool files_tail(size_t tail);
  // Retires the current chunk `c` at `top`: its tail filed (`file`) or left in place.
  void salvage(Chunk* c, char* top, bool file);
  // Files the tails left in place (salvage) into the wastage target's free blocks, which exist.
  void file_tails_left_in_place();
  void give_away(char* p, size_t bytes, BlockOrigin origin);
  // `slack`: bytes at the end of the block past the request (0..7), filled with a pattern.
  void install_fence(char* block, size_t bytes, size_t slack);
  ms_error_t deallocate_parked(void* p, size_t bytes);
  // Bytes bumped off this arena's chunks, the home prefix apart: what contribution() and
  // fold_if_due() count as consumed.
  size_t consumed_without_prefix() const;
  // This arena's contribution to the space counters.
  struct Contribution {
    size_t consumed = 0;  // bumped off this arena's chunks (all in its own space), not the home prefix
    size_t free_bytes[2][kBlockOrigins] = {};  // [BlockWhere][BlockOrigin]
    size_t fence_bytes[2] = {};                // [BlockWhere]
    size_t free_bytes_lying(BlockWhere where) const {
      size_t n = 0;
      for (size_t b : free_bytes[static_cast<int>(where)]) n += b;
      return n;
    }
    size_t free_count = 0;
    bool operator==(const Contribution& o) const;  // all fields are size_t: no padding
  };
  Contribution contribution() const;
  void apply(const Contribution& now);
  void fold(const Contribution& now);
  void fold_if_due();
  static bool same_foreign(const Contribution& a, const Contribution& b);
  // The owner paths' precondition: the bins are published and hold blocks of n bytes (8..1024).
  bool owner_bins_serve(size_t n) const;
  static constexpr size_t kFoldSlackBytes = 64 * 1024;
  // The counters of the space foreign blocks lie in: the donor's (class) space.
  SpaceUsage& foreign_usage() const;

  ChunkManager& manager_;  // of this arena's space; `chunks_` are the chunks it holds
  const GrowthPolicy policy_;
  const size_t alignment_;
  // The loader's public head: the window is head_->bump[space_], fit_max head_->fit_max[space_]
  // (computed, not stored: a loader object is made of two arenas, and there may be many).
  ms__loader_head* const head_;
  ms__bump* window() const { return &head_->bump[space_]; }
  uint32_t* fit_max_slot() const { return &head_->fit_max[space_]; }
  const uint8_t space_;
  const bool fast_path_;
  const bool inline_free_;
  const bool checked_;
  const bool count_allocations_;
  // Checked mode: a take met a free block the runtime wrote over after freeing it (reported then,
  // MS_ERR_OVERWRITE). The lists are not trusted from then on: nothing is taken from them or
  // filed in them, freed blocks stay handed out (counted as used) until the loader dies, and
  // verify() reports the overwrite. In the padding behind the flags (the arena stays 280 bytes).
  bool condemned_ = false;
  // Bytes at the start of the home chunk that are the owner's (adopt_home_chunk), or 0. In the
  // padding behind the flags: the arena stays 280 bytes. (A prefix is about 300 bytes.)
  uint16_t home_prefix_ = 0;
  Arena* const wastage_;

  Chunk* chunks_ = nullptr;  // current chunk first
  size_t chunk_count_ = 0;
  char* top_ = nullptr;      // valid while parked
  char* end_ = nullptr;      // end of the current chunk's committed part, while parked
  bool parked_ = true;
  const bool shared_;  // ArenaOptions::shared; in the padding behind parked_
  // Sum of the committed tails of retired chunks left in place (new_chunk): each below
  // kSmallestTailWorthFiling. 32 bits, in the padding behind parked_ (the arena stays 280 bytes,
  // its loader's arenas 304, one slab class): a tail that would overflow it is filed instead.
  // Part of retired_consumed_ and of the salvaged free bytes in the counters, never a block.
  uint32_t unfiled_tail_bytes_ = 0;
  // The free-block structures (672 bytes) come from the space's bookkeeping on first need: most
  // micro loaders never free anything, and paid for two of them each (1 224-byte loaders). A
  // small retired tail alone does not make one (kSmallestTailWorthFiling).
  FreeBlocks* free_blocks_ = nullptr;
  const char* foreign_lo_ = nullptr;
  const char* foreign_hi_ = nullptr;
  // Creates free_blocks_ if missing; false with MS_ERR_OUT_OF_MEMORY recorded.
  bool ensure_free_blocks();
  // The arena that receives this one's gaps and tails.
  Arena& wastage_target() { return wastage_ != nullptr ? *wastage_ : *this; }
  bool foreign(const void* p) const { return p >= foreign_lo_ && p < foreign_hi_; }
  // The home chunk is the one that holds this arena object.
  bool is_home(const Chunk* c) const { return home_prefix_ != 0 && c->contains(this); }
  // Where the memory handed out from `c` starts: past the prefix in the home chunk.
  char* handed_out_base(const Chunk* c) const {
    return is_home(c) ? c->base + home_prefix_ : c->base;
  }
  bool has_free_blocks() const {
    return free_blocks_ != nullptr && !condemned_ && !free_blocks_->empty();
  }
  // What free-block walks may read: memory this arena (or its donor) handed out.
  BlockBounds handed_out_bounds(size_t max_blocks) const;
  size_t largest_free_block() const {
    return free_blocks_ == nullptr ? 0 : free_blocks_->largest_bytes();
  }
  uint64_t slow_allocations_ = 0;
  uint64_t allocations_ = 0;  // with count_allocations_: blocks handed out
  FenceList fences_;
  size_t foreign_fence_count_ = 0;
  // The arena whose alignment gaps and tails this one receives (set by that arena): blocks this
  // arena hands out may lie in the donor's chunks, so checked-mode ownership looks there too.
  Arena* donor_ = nullptr;
  SpaceUsage* donor_usage_ = nullptr;  // stays set after the donor died: foreign blocks remain
  // Bumped off the retired chunks: their used_bytes, and their committed tails left in place
  // (unfiled_tail_bytes_), which used_bytes leaves out (owns() never sees them).
  size_t retired_consumed_ = 0;
  Contribution folded_;                // what the counters hold of this arena
  size_t folded_chunks_ = 0;           // chunk_count_ at the last fold
  // owns(), or within the donor's handed-out memory.
  bool handed_out(const void* p, size_t bytes) const;
  // Bytes of this arena's and the donor's chunks handed out so far (bounds free-block walks).
  size_t handed_out_bytes() const;
};

}  // namespace metaspace
