// The part of a loader that owns chunks: its class and non-class arenas, made separately from the
// loader object (from the space's bookkeeping) and only when needed — at creation for boot and
// standard loaders, at graduation for micro loaders (see micro_pool.hpp), which mostly never need
// it; the class arena apart again, at the loader's first class block that the micro pool does not
// serve (standard loaders' first Klasses come from the pool). It also keeps what a loader's pooled
// blocks need beyond the loader object's record: the blocks freed before the loader died and, in
// checked mode, their fences.
//
// A micro loader object is then 128 bytes of bookkeeping instead of 752 (two 280-byte arenas
// inline, including 104 bytes each of usage-fold state); a standard loader whose Klasses are all
// pooled adds 360 bytes here (a 384-byte slab object) instead of 632.
//
// Where this object lives (home()): in the space's bookkeeping slab, or at the start of the
// loader's own first non-class chunk. The second is for boot and standard loaders whose inline
// paths are open (not shared, not checked, not counting allocations): made lazily, by the
// loader's first non-class allocation that the arenas serve (LoaderMetaspace::ensure_arenas),
// never at ms_loader_create, which so takes no chunk memory and meets no chunk-manager error.
// The chunk is taken to fit the object (rounded up to 16 bytes: chunk_prefix_bytes()) and that
// request, at the growth policy's first level or larger; the arena's top starts behind the
// object, and the chunk doubles in place while it is the arena's only one (Arena, "home chunk").
// Why: loaders that die in random order leave slab pages holding the survivors' arenas (13 to a
// page), while each survivor's first chunk, its first 4 KiB granule pinned by it anyway, has
// ~650 bytes free there (docs/bookkeeping.md, "A loader's arenas in its first non-class chunk",
// has the traces). The object's bytes count as overhead, not used (Arena::adopt_home_chunk), and
// the chunk goes back last, after the arenas are destroyed (destroy()). Everything else stays in
// the slab: micro loaders (graduated), shared, checked and counting loaders, a loader whose
// first need of the arenas is a class block or a pooled block's free (no non-class chunk is taken
// for it: such a request must not start failing at the cap for a chunk it does not use), and a
// first request too large to share a root chunk with the object.
#pragma once

#include <metaspace/detail/loader_head.h>

#include <cstddef>
#include <new>

#include "arena/arena.hpp"
#include "arena/fence.hpp"
#include "arena/growth_policy.hpp"
#include "common/assert.hpp"
#include "slab/slab_allocator.hpp"
#include "chunks/chunk_manager.hpp"
#include "loader/shared_windows.hpp"

namespace metaspace {

struct LoaderArenasOptions {
  ms_loader_kind_t kind = MS_LOADER_STANDARD;
  size_t class_alignment = kWordBytes;
  const char* class_lo = nullptr;  // the class space's range: non-class blocks in class gaps
  const char* class_hi = nullptr;  // are class space memory
  bool fast_path = true;           // not shared between threads
  bool checked = false;
  bool count_allocations = false;  // LoaderEnvironment::count_allocations
};

class LoaderArenas {
 public:
  // `head`: the loader's public windows, which the arenas' fast path uses. The class arena is
  // made later, by make_class(), when the loader's first class block does not come from the
  // micro pool.
  LoaderArenas(ChunkManager& nonclass, ms__loader_head& head, const LoaderArenasOptions& options)
      : nonclass_(nonclass, GrowthPolicy::for_loader(options.kind, MS_SPACE_NONCLASS,
                                                     nonclass.geometry()),
                  ArenaOptions{.head = &head,
                               .space = MS_SPACE_NONCLASS,
                               .fast_path = options.fast_path,
                               .inline_free = true,
                               .checked = options.checked,
                               .count_allocations = options.count_allocations,
                               .shared = !options.fast_path}) {
    nonclass_.set_foreign_range(options.class_lo, options.class_hi);
  }
  // The class arena goes first (destroy_class): it hands wastage to the non-class one.
  ~LoaderArenas() {
    MS_ASSERT(class_ == nullptr && pooled_ == nullptr, "class arena or pooled figures left");
  }
  LoaderArenas(const LoaderArenas&) = delete;
  LoaderArenas& operator=(const LoaderArenas&) = delete;

  enum class Home : uint8_t { kBookkeeping, kFirstChunk };
  Home home() const {
    return nonclass_.home_prefix_bytes() != 0 ? Home::kFirstChunk : Home::kBookkeeping;
  }
  // What the object takes of its first chunk (a multiple of 16: the alignment of the top behind
  // it and more than the object needs).
  static constexpr size_t chunk_prefix_bytes() { return (sizeof(LoaderArenas) + 15) / 16 * 16; }

  // Whether a first non-class request of `bytes` (rounded to 8) can share a chunk with the
  // object: the two must fit a root chunk.
  static bool fits_first_chunk(const ChunkGeometry& geometry, size_t bytes) {
    return bytes <= geometry.root_bytes() - chunk_prefix_bytes();
  }
  // Made at the start of a new chunk of `nonclass` that has room, committed, for it and the
  // loader's first non-class request of `first_request` bytes (rounded to 8; fits_first_chunk):
  // that request then bumps off it. Null with the chunk manager's error recorded (MS_ERR_LIMIT,
  // a commit failure), and nothing held.
  static LoaderArenas* create_in_first_chunk(ChunkManager& nonclass, ms__loader_head& head,
                                             const LoaderArenasOptions& options,
                                             size_t first_request) {
    MS_ASSERT(!options.checked && fits_first_chunk(nonclass.geometry(), first_request),
              "arenas in the first chunk: checked, or a request of %zu bytes", first_request);
    const ChunkGeometry& geometry = nonclass.geometry();
    size_t need = chunk_prefix_bytes() + first_request;
    int fit = geometry.level_fitting(need);
    GrowthPolicy policy = GrowthPolicy::for_loader(options.kind, MS_SPACE_NONCLASS, geometry);
    int preferred = policy.level_at(0) < fit ? policy.level_at(0) : fit;
    Chunk* c = nonclass.get_chunk(preferred, fit, need);
    if (c == nullptr) return nullptr;
    auto* arenas = new (c->base) LoaderArenas(nonclass, head, options);
    arenas->nonclass_.adopt_home_chunk(c, chunk_prefix_bytes());
    return arenas;
  }
  // Made in `bookkeeping`; null with MS_ERR_OUT_OF_MEMORY recorded.
  static LoaderArenas* create_in_bookkeeping(SlabAllocator& bookkeeping, ChunkManager& nonclass,
                                             ms__loader_head& head,
                                             const LoaderArenasOptions& options) {
    return bookkeeping.create<LoaderArenas>(nonclass, head, options);
  }
  // Ends `arenas` where it lives (class arena, windows and pooled figures already gone). The
  // home chunk goes back after the object's destructor, which returns every other chunk; then
  // nothing touches its memory.
  static void destroy(LoaderArenas* arenas, SlabAllocator& bookkeeping, ChunkManager& nonclass) {
    if (arenas == nullptr) return;
    if (arenas->home() == Home::kBookkeeping) {
      bookkeeping.destroy(arenas);
      return;
    }
    Chunk* home = arenas->nonclass_.home_chunk();
    arenas->~LoaderArenas();
    // In use by construction; a refusal would mean corrupted lists (verify reports them).
    (void)nonclass.return_chunk(home);
  }
  // The object lies at the start of its arena's home chunk, which that arena holds.
  bool verify_home() const {
    if (home() == Home::kBookkeeping) return true;
    const Chunk* c = nonclass_.home_chunk();
    return c != nullptr && c->base == reinterpret_cast<const char*>(this) &&
           c->state == Chunk::State::kInUse && c->owner_is(&nonclass_) &&
           nonclass_.home_prefix_bytes() == chunk_prefix_bytes();
  }

  // Makes the class arena from `bookkeeping`; false with MS_ERR_OUT_OF_MEMORY recorded.
  bool make_class(SlabAllocator& bookkeeping, ChunkManager& klass, ms__loader_head& head,
                  const LoaderArenasOptions& options) {
    if (class_ != nullptr) return true;
    void* slot = bookkeeping.allocate(class_slot_bytes());
    if (slot == nullptr) return false;
    // With 8-byte class alignment nothing is lost to gaps and tails can stay in class space.
    class_ = new (slot) Arena(
        klass, GrowthPolicy::for_loader(options.kind, MS_SPACE_CLASS, klass.geometry()),
        ArenaOptions{.alignment = options.class_alignment,
                     .head = &head,
                     .space = MS_SPACE_CLASS,
                     .fast_path = options.fast_path,
                     .wastage = options.class_alignment > kWordBytes ? &nonclass_ : nullptr,
                     .checked = options.checked,
                     .count_allocations = options.count_allocations,
                     .shared = !options.fast_path});
    return true;
  }
  void destroy_class(SlabAllocator& bookkeeping) {
    if (class_ == nullptr) return;
    class_->~Arena();
    bookkeeping.free(class_, class_slot_bytes());
    class_ = nullptr;
  }
  bool has_class() const { return class_ != nullptr; }
  // The class arena takes a slot of this object's size: the same slab size class, so its pages
  // are shared. A size class of its own would hold one more 4 KiB page for the boot loader alone.
  static constexpr size_t class_slot_bytes() {
    return sizeof(Arena) > sizeof(LoaderArenas) ? sizeof(Arena) : sizeof(LoaderArenas);
  }

  // The class arena must exist (has_class()).
  Arena& of(ms_space_t space) {
    MS_ASSERT(space != MS_SPACE_CLASS || class_ != nullptr, "no class arena yet");
    return space == MS_SPACE_CLASS ? *class_ : nonclass_;
  }
  const Arena& of(ms_space_t space) const {
    MS_ASSERT(space != MS_SPACE_CLASS || class_ != nullptr, "no class arena yet");
    return space == MS_SPACE_CLASS ? *class_ : nonclass_;
  }

  // A micro loader's pooled blocks, by the space they lie in: freed before the loader's death
  // (they stay charged to it until then, counted as deallocated free blocks), and fences; and
  // how many the loader was handed (while allocations are counted).
  struct Pooled {
    size_t freed_bytes[2] = {};
    size_t freed_count[2] = {};
    size_t fence_bytes[2] = {};
    uint64_t allocations = 0;
    FenceList fences;
  };
  // Made when first needed (a pooled block freed; checked mode or counted allocations: at once,
  // for the fences and the count), so that the rest of this object fits a 320-byte slab slot.
  Pooled* pooled() { return pooled_; }
  const Pooled* pooled() const { return pooled_; }
  Pooled* ensure_pooled(SlabAllocator& bookkeeping) {
    if (pooled_ == nullptr) pooled_ = bookkeeping.create<Pooled>();
    return pooled_;  // null: MS_ERR_OUT_OF_MEMORY is recorded
  }
  void destroy_pooled(SlabAllocator& bookkeeping) {
    bookkeeping.destroy(pooled_);
    pooled_ = nullptr;
  }

  // A shared loader's per-thread allocation windows (shared_windows.hpp), or null: not shared, or
  // checked mode (every call then takes the loader lock). Kept here rather than in the loader
  // object, which micro loaders keep small.
  SharedWindows* windows = nullptr;

 private:
  // In an object made in its first chunk, this arena lies in its own home chunk (Arena::is_home).
  Arena nonclass_;
  // Apart, and only once needed: a standard loader whose Klasses all come from the micro pool
  // never needs one. 384 bytes of slab per such loader instead of 640; the interleave trace's
  // loaders die in random order and their slab pages stay while one object in them lives.
  Arena* class_ = nullptr;
  // Apart too: 72 bytes that few loaders use. Without them this object takes a 320-byte slot
  // (12 to a slab page) instead of a 384-byte one (10): at the interleave trace's worst sample
  // 163 live loaders' objects held 41 slab pages.
  Pooled* pooled_ = nullptr;
};

static_assert(alignof(LoaderArenas) <= 16, "chunk bases are 16-byte aligned at least");

}  // namespace metaspace
