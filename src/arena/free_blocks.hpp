// An arena's blocks awaiting reuse: premature deallocations, salvaged chunk tails and class
// alignment gaps. Small sizes go to exact-size bins, larger ones to a balanced tree, and a
// request is served best fit over *all* sizes: the smallest block that holds it, wherever it is.
// (HotSpot lets small requests look only in the bins, so the 33–127-word gaps of 1 KiB class
// alignment are almost never reused.)
//
// A block's tag is its origin, plus kForeignTag when it lies in the foreign range. Tag 0 — freed
// by the runtime, in the arena's own space — is what a loader's inline paths file and take in the
// bins (bin_list.hpp), so the bytes of that one kind are not counted apart: they are what is left
// of the total after the other kinds, which change only out of line.
#pragma once

#include <cstddef>

#include "arena/bin_list.hpp"
#include "arena/block_tree.hpp"
#include "arena/medium_bins.hpp"
#include "common/assert.hpp"

namespace metaspace {

// Where a free block came from: the report breaks waste down by it, and a split block's rest
// keeps its origin.
enum class BlockOrigin : unsigned { kDeallocated = 0, kSalvaged = 1, kAlignmentGap = 2 };
constexpr int kBlockOrigins = 3;

class FreeBlocks {
 public:
  FreeBlocks() { reset_moved_bytes(); }
  // Blocks inside [foreign_lo, foreign_hi) are counted apart: a non-class arena receives class
  // space gaps, and the statistics must charge those bytes to the class space.
  void set_foreign_range(const char* lo, const char* hi) {
    foreign_lo_ = lo;
    foreign_hi_ = hi;
  }

  // bytes: a multiple of 8, at least 8.
  void add(void* p, size_t bytes, BlockOrigin origin = BlockOrigin::kDeallocated);
  // The smallest block of at least `bytes`, or null; its size goes to *got_bytes.
  void* take(size_t bytes, size_t* got_bytes, BlockOrigin* origin = nullptr);
  // Checked mode's take(): the same block, handed out only if nothing on the way to it was
  // written after it was freed — the links and nodes take() follows (read only once `bounds`
  // accepts them) and, for a block the runtime freed, the zap pattern (Fence::kZapFreed) behind
  // its list link or tree node. Otherwise null with *damaged set and MS_ERR_OVERWRITE recorded,
  // naming the block; nothing is taken. Costs the block's size, as the zap on free did.
  // `read_past`: bytes just past a chunk tail or an alignment gap may be read (no other thread
  // writes there: the loader is not shared), which catches a freed block's tag overwritten to
  // one of theirs.
  void* take_checked(size_t bytes, const BlockBounds& bounds, bool read_past, size_t* got_bytes,
                     BlockOrigin* origin, bool* damaged);

  bool empty() const { return bins_.empty() && tree_.empty() && (medium() == nullptr || medium()->empty()); }
  size_t count() const {
    return bins_.count() + tree_.count() + (medium() != nullptr ? medium()->count() : 0);
  }
  size_t bytes() const {
    return (bins_.words() + tree_.words() + (medium() != nullptr ? medium()->words() : 0)) * 8;
  }

  // Everything statistics need, summed in one pass over the bins' counters.
  struct Totals {
    size_t count = 0;
    size_t bytes = 0;
    size_t bytes_by[kBlockOrigins][2] = {};  // [origin][in foreign range]
  };
  Totals totals() const {
    Totals t;
    size_t words = 0;
    bins_.sum(&t.count, &words);
    if (medium() != nullptr) medium()->sum(&t.count, &words);
    t.count += tree_.count();
    t.bytes = (words + tree_.words()) * 8;
    size_t others = 0;
    for (int o = 0; o < kBlockOrigins; o++) {
      for (int f = 0; f < 2; f++) {
        t.bytes_by[o][f] = by(o, f);
        others += by(o, f);
      }
    }
    t.bytes_by[0][0] = t.bytes - others;
    return t;
  }

  // The medium bins (medium_bins.hpp) are the owner's to make: true if a block of `bytes` would
  // go to them and they do not exist yet.
  bool wants_medium(size_t bytes) const {
    return medium() == nullptr && MediumBins::fits(bytes / 8);
  }
  // Takes them in and moves every tree block they cover there: from now on the three structures
  // hold disjoint size ranges, ascending (bins, medium bins, tree).
  void attach_medium(MediumBins* medium);
  // Made by the arena on first need, null until then. Kept only in the public bins' pointer (the
  // inline paths' copy): a second pointer here made this structure 688 bytes, 5 to a slab page.
  MediumBins* medium() const { return MediumBins::of(bins_.shared_state().medium); }
  size_t foreign_bytes() const {
    return by(0, 1) + by(1, 1) + by(2, 1);
  }
  // Bytes of one origin, inside (foreign) or outside the foreign range.
  size_t bytes_of(BlockOrigin origin, bool in_foreign_range) const {
    if (origin != BlockOrigin::kDeallocated || in_foreign_range) {
      return by(static_cast<int>(origin), in_foreign_range ? 1 : 0);
    }
    return bytes() - by(1, 0) - by(2, 0) - foreign_bytes();
  }
  size_t largest_bytes() const {
    if (!tree_.empty()) return tree_.largest_words() * 8;
    if (medium() != nullptr && !medium()->empty()) return medium()->largest_words() * 8;
    return bins_.largest_words() * 8;
  }
  // Bytes filed plus bytes taken since the last reset, at most kMoveBudgetBytes ahead of what
  // was counted (a lost update between the owner's inline paths and a reader's reset only makes
  // it larger). The arena folds its state into the space counters when this (with what it
  // bumped) reaches its slack, and resets it then, instead of recomputing and comparing its whole
  // contribution on every call. The inline paths count down the same
  // budget and leave the rest to the out-of-line path once it is spent.
  static constexpr size_t kMoveBudgetBytes = 64 * 1024;  // docs/threads.md, "Counters"
  size_t moved_bytes() const {
    intptr_t left = __atomic_load_n(&bins_.shared_state().budget, __ATOMIC_RELAXED);
    return static_cast<size_t>(static_cast<intptr_t>(kMoveBudgetBytes) - left);
  }
  void reset_moved_bytes() {
    __atomic_store_n(&bins_.shared_state().budget, static_cast<intptr_t>(kMoveBudgetBytes),
                     __ATOMIC_RELAXED);
  }
  // The owner's note of the last retired chunk a freed block lay in (an opaque hint in front of
  // the chunk start table: frees cluster by age, and the table's probes are dear per free).
  // Kept here because this structure exists only for arenas that free. [lo, hi): the chunk's
  // handed-out part, where the inline ms_deallocate may file blocks itself.
  const void* chunk_hint() const { return chunk_hint_; }
  void set_chunk_hint(const void* chunk, const char* lo, const char* hi) {
    chunk_hint_ = chunk;
    bins_.shared_state().retired_lo = reinterpret_cast<uintptr_t>(lo);
    bins_.shared_state().retired_hi = reinterpret_cast<uintptr_t>(hi);
  }
  // The current chunk's start, for the inline ms_deallocate (the window's top ends it).
  void set_current_chunk(const char* base) {
    bins_.shared_state().current_lo = reinterpret_cast<uintptr_t>(base);
  }
  // What the inline paths of a loader that is not shared work on (metaspace/detail/). Once published
  // verify() excludes them while it walks the lists.
  ms__free_bins& publish() {
    published_ = true;
    return bins_.shared_state();
  }
  ms__free_bins& shared_bins() { return bins_.shared_state(); }
  // True if p lies in the foreign range (the other space).
  bool in_foreign_range(const void* p) const { return foreign(p); }

  // Both structures walked within `bounds` (see block_bounds.hpp), then the origin counters.
  // Once published() the caller first excludes the owner's inline paths (OwnerExclusion).
  bool published() const { return published_; }
  bool verify(const BlockBounds& bounds = {}) const;
  // f(block, bytes, origin); only on free blocks that verify() accepted.
  template <typename F>
  void for_each(F f) const {
    auto visit = [&](void* p, size_t words, unsigned tag) {
      f(p, words * 8, static_cast<BlockOrigin>(tag & (kForeignTag - 1)));
    };
    bins_.for_each(visit);
    if (medium() != nullptr) medium()->for_each(visit);
    tree_.for_each(visit);
  }

 private:
  bool foreign(const void* p) const { return p >= foreign_lo_ && p < foreign_hi_; }
  // A tag the library writes for a block at p: an origin, with kForeignTag iff p is foreign.
  bool tag_sound(const void* p, unsigned tag) const {
    return (tag & (kForeignTag - 1)) < static_cast<unsigned>(kBlockOrigins) &&
           (tag >= kForeignTag) == foreign(p);
  }
  // Checked mode: what is wrong with the free block [block, block + bytes) whose header (the
  // first `header` bytes) carries `tag`, or null; with `whole` also its zap pattern.
  const char* damage(const void* block, size_t bytes, unsigned tag, size_t header,
                     const BlockBounds& bounds, bool whole, bool read_past) const;

  static constexpr unsigned kForeignTag = 4;
  static_assert(kBlockOrigins <= static_cast<int>(kForeignTag) &&
                (kForeignTag | (kForeignTag - 1)) <= BinList::kMaxTag);
  unsigned tag_of(const void* p, BlockOrigin origin) const {
    return static_cast<unsigned>(origin) | (foreign(p) ? kForeignTag : 0);
  }
  // Counted apart: every kind but tag 0.
  void count_bytes(unsigned tag, intptr_t bytes) {
    if (tag != 0) {
      bytes_by_[(tag & (kForeignTag - 1)) * 2 + (tag >= kForeignTag ? 1 : 0) - 1] +=
          static_cast<size_t>(bytes);
    }
  }
  void spend(size_t bytes) {
    ms__free_bins& b = bins_.shared_state();
    __atomic_store_n(&b.budget, __atomic_load_n(&b.budget, __ATOMIC_RELAXED) -
                                    static_cast<intptr_t>(bytes), __ATOMIC_RELAXED);
  }

  BinList bins_;
  BlockTree tree_;
  const char* foreign_lo_ = nullptr;
  const char* foreign_hi_ = nullptr;
  // Bytes by [origin][in foreign range] but for [0][0] (deallocated, not foreign: the rest of
  // bytes()), which is not kept: 8 bytes fewer, and with medium() read from the bins this
  // structure is 672 bytes, 6 to a slab page instead of 5 (one page less for the 33 loaders
  // that free at the lab's jdk25-many-loaders worst sample).
  size_t bytes_by_[kBlockOrigins * 2 - 1] = {};
  size_t by(int origin, int foreign) const {
    return origin == 0 && foreign == 0 ? 0 : bytes_by_[origin * 2 + foreign - 1];
  }
  const void* chunk_hint_ = nullptr;
  bool published_ = false;
};

// Inline: they are most of a free's and a reuse's work, so a call would be a sizeable part of it.
inline void FreeBlocks::add(void* p, size_t bytes, BlockOrigin origin) {
  MS_ASSERT(bytes >= 8 && bytes % 8 == 0, "free block %p of %zu bytes", p, bytes);
  size_t words = bytes / 8;
  unsigned tag = tag_of(p, origin);
  if (words <= BinList::kMaxWords) {
    bins_.add(p, words, tag);
  } else if (medium() != nullptr && MediumBins::fits(words)) {
    medium()->add(p, words, tag);
  } else {
    tree_.add(p, words, tag);
  }
  count_bytes(tag, static_cast<intptr_t>(bytes));
  spend(bytes);
}

inline void* FreeBlocks::take(size_t bytes, size_t* got_bytes, BlockOrigin* origin) {
  size_t words = bytes / 8;
  size_t got_words = 0;
  unsigned tag = 0;
  void* p = nullptr;
  if (words <= BinList::kMaxWords) p = bins_.take(words, &got_words, &tag);
  // Every medium block is larger than every bin block and, once the medium bins exist, every
  // tree block larger than every medium one: the first answer, if any, is the best.
  if (p == nullptr && medium() != nullptr && words <= MediumBins::kMaxWords) {
    p = medium()->take(words, &got_words, &tag);
  }
  if (p == nullptr) p = tree_.take(words, &got_words, &tag);
  if (p == nullptr) return nullptr;
  *got_bytes = got_words * 8;
  count_bytes(tag, -static_cast<intptr_t>(*got_bytes));
  spend(*got_bytes);
  if (origin != nullptr) *origin = static_cast<BlockOrigin>(tag & (kForeignTag - 1));
  return p;
}

// Six to a 4 KiB slab page (SlabAllocator's 672-byte class): one more byte and it is five.
static_assert(sizeof(FreeBlocks) <= 672, "FreeBlocks outgrew its slab class");

}  // namespace metaspace
