// A loader metaspace: what a runtime creates per class loader. It pairs a class arena (in the
// compressed class space) with a non-class arena, both with growth policies chosen by the
// loader kind. Class alignment gaps and class chunk tails go to the non-class arena's free
// blocks, so a large class alignment costs address space, not memory.
//
// Micro loaders own no chunks at first: their blocks come from the metaspace's micro pool
// (micro_pool.hpp), recorded as a few runs inside this object. A micro loader that outgrows the
// pool "graduates": it gets arenas like any other loader and keeps its pooled runs until it dies.
// The arenas live apart (LoaderArenas), made only when needed, so that a micro loader object is
// 128 bytes. Boot and standard loaders whose inline paths are open make them with
// their first non-class allocation, at the start of that allocation's chunk (loader_arenas.hpp):
// creating a loader takes no chunk memory.
//
// Standard loaders take their Klasses from the pool too (at 8-byte class alignment), and graduate
// by the same rules: a loader with a few classes then pays no class chunk of its own. A 2 KiB
// class chunk for one or two ~590-byte Klasses would leave ~870 bytes of it unused, and after the
// loader's death pin its granule for as long as the buddy chunk (another loader's) lives. Their
// non-class blocks stay in their own arena: a loader's non-class data typically fills most of a
// 4 KiB granule of a chunk of its own, which goes back whole at death; packed in shared chunks,
// the blocks of dead loaders would pin the granules of the living. bench/analysis.md ("Moved
// from code comments") has the replay that decided both.
//
// Layout: the public fast-path head (two bump windows) comes first, so that the handle the
// runtime holds is also what the inline ms_allocate reads. A pooled micro loader's windows stay
// closed: every allocation takes the slow path (a micro loader makes ~20).
//
// Locking: `lock_` is held on every slow path and by statistics. Fast-path bumps of loaders that
// are not shared run without it; they only move `top` within already committed memory.
#pragma once

#include <metaspace/detail/loader_head.h>

#include <atomic>
#include <cstdint>

#include "arena/arena.hpp"
#include "common/relative_link.hpp"
#include "common/units.hpp"
#include "context/class_space.hpp"
#include "context/context.hpp"
#include "loader/loader_arenas.hpp"
#include "loader/loader_lock.hpp"
#include "loader/micro_pool.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

struct LoaderStats {
  const void* handle = nullptr;      // the runtime's ms_loader_t*, to name the loader in reports
  bool destroyed = false;
  ms_loader_kind_t kind = MS_LOADER_STANDARD;
  bool allocations_counted = false;
  uint64_t allocations = 0;          // blocks handed out, if allocations_counted
  // Arena figures; a micro loader's pooled bytes count as consumed, committed and capacity.
  ArenaStats arena[2];
  size_t used_bytes[2] = {};         // by where the memory lies
  size_t free_blocks_bytes[2] = {};  // by where the memory lies
  size_t fence_bytes[2] = {};        // by where the memory lies
  size_t pooled_bytes[2] = {};       // held in the micro pool's shared chunks
  size_t free_bytes(ms_space_t lies_in, BlockOrigin origin) const {
    return free_bytes_by_space_origin[lies_in][static_cast<int>(origin)];
  }
  size_t free_bytes_by_space_origin[2][kBlockOrigins] = {};  // [ms_space_t][BlockOrigin]
};

// What all loaders of one metaspace share (owned by the metaspace).
struct LoaderEnvironment {
  Context& nonclass;
  ClassSpace& class_space;
  CommitLimiter& limiter;
  MicroPool& pool;
  ms_metaspace_t* owner;  // passed to the GC threshold callback, after the loader lock is released
  bool checked;
  // Every block handed out is counted (settings count_allocations, or checked mode). The inline
  // fast path does not count (a store per block on the hottest path), so counting keeps it
  // closed: every block then goes through the library, which counts it. Off, nothing counts.
  bool count_allocations;
};

class LoaderMetaspace : public ms__loader_head {
 public:
  explicit LoaderMetaspace(const LoaderEnvironment& env);
  ~LoaderMetaspace();
  LoaderMetaspace(const LoaderMetaspace&) = delete;
  LoaderMetaspace& operator=(const LoaderMetaspace&) = delete;

  // A handle that does not carry this is not a loader (a stray pointer, or freed memory).
  bool valid_handle() const { return magic_ == kMagic; }
  // The runtime's handle of this loader: its address and its tag (metaspace.h,
  // MS__HANDLE_TAG_MASK), which the metaspace chooses before open() (dead_handles.hpp).
  uintptr_t handle() const {
    return reinterpret_cast<uintptr_t>(static_cast<const ms__loader_head*>(this)) | tag_;
  }
  void set_tag(uint8_t tag) { tag_ = tag; }
  // A dead loader whose object the metaspace keeps (its handle could not be remembered among
  // the dead ones: LoaderRegistry::destroy); the object then tells a stale handle it is dead.
  void mark_kept_dead() { kind_.fetch_or(kKeptDeadBit, std::memory_order_relaxed); }
  bool kept_dead() const { return (kind_bits() & kKeptDeadBit) != 0; }
  // The object a handle names, whether or not it is (still) that handle's loader.
  static LoaderMetaspace* object_of(uintptr_t handle) {
    return static_cast<LoaderMetaspace*>(ms__head_of(reinterpret_cast<ms_loader_t*>(handle)));
  }

  // Gives the (recycled) object a life. False with MS_ERR_OUT_OF_MEMORY if its arenas could not
  // be made (then nothing changed).
  bool open(ms_loader_kind_t kind, unsigned flags);
  // Ends it: every chunk goes back. The object stays valid (and detectably dead) until reused.
  // In checked mode the fences are checked first (the first overrun found is returned, the
  // loader dies all the same) and the memory is zapped.
  ms_error_t close();
  bool alive() const { return alive_; }

  // One attempt, under the lock. A refusal by the cap is not reported to the runtime here: the
  // GC callback may destroy this very loader, so the caller tells it once it holds nothing of
  // the loader (the C API's allocate_checked, which also tries once more).
  void* allocate(ms_space_t space, size_t bytes);
  // Lock-free, on a live loader: a shared loader's block from the calling thread's window of
  // `space`, or null (then allocate()). The whole path of most of a shared loader's blocks: the
  // C API tries it before anything else.
  void* allocate_in_window(ms_space_t space, size_t bytes) const {
    uint64_t key = window_key();
    if (key == 0 || static_cast<unsigned>(space) > 1u ||
        bytes - 1 >= SharedWindows::kMaxWindowRequest) {
      return nullptr;
    }
    return SharedWindows::try_bump(key, space, align_up(bytes, kWordBytes));
  }
  // Without the lock, on a live loader that is not shared, for its owner: a Klass freed earlier
  // of exactly this size, popped off the class arena's bins as the inline reuse pops non-class
  // blocks (Arena::owner_reuse); null: allocate(). The C API tries it first thing in
  // ms_allocate_slow, inside the fork gate (the fork keeps out only the non-class bins' inline
  // owners, live_metaspaces.hpp). Class space is 2.6 % of the size mix's requests, and behind
  // the C API's barrier and second handle check a Klass pop costs ~150 instructions more
  // (docs/threads.md).
  void* reuse_klass_without_lock(size_t bytes) {
    return owner_may_skip_lock() ? arenas_->of(MS_SPACE_CLASS).owner_reuse(bytes) : nullptr;
  }
  // The same for a free: a block of the class arena's current or last-hit retired chunk goes to
  // its bin (Arena::owner_deallocate). False: deallocate(). p and bytes may be anything.
  bool free_klass_without_lock(void* p, size_t bytes) {
    return owner_may_skip_lock() && env().class_space.contains(p) &&
           arenas_->of(MS_SPACE_CLASS).owner_deallocate(p, bytes);
  }
  // A shared loader's windows' key (SharedWindows::key()), kept in its public head
  // (bump[MS_SPACE_NONCLASS].spare: detail/loader_head.h) while it has windows; 0 for every other
  // loader. Only a shared loader's word is read: an executable built against an older header
  // may write the word of a loader whose inline paths are open, never a shared one's.
  uint64_t window_key() const {
    return shared() ? __atomic_load_n(&bump[MS_SPACE_NONCLASS].spare, __ATOMIC_RELAXED) : 0;
  }
  ms_error_t deallocate(void* p, size_t bytes);

  LoaderLock& lock() { return lock_; }
  // Caller holds lock() and both chunk managers' locks.
  LoaderStats stats_locked() const;
  // Takes the locks itself.
  LoaderStats stats();
  // Folds both arenas' state into the space counters (Arena::fold_usage). Caller holds lock().
  void fold_usage_locked();
  ms_metaspace_t* owner() const { return env().owner; }
  // Caller holds lock().
  bool verify_locked() const;

  ms_loader_kind_t kind() const { return static_cast<ms_loader_kind_t>(kind_bits() & kKindMask); }
  // Whether a block of `space` comes from the micro pool: every block of a micro loader, and
  // the class blocks of a standard loader, until the pool tells the loader to graduate.
  bool pools(ms_space_t space) const;
  // Standard loaders pool their Klasses only where shared chunks are this small (pools()).
  static constexpr size_t kMaxSharedChunkForKlasses = 4 * 1024;
  bool shared() const { return (kind_bits() & kSharedBit) != 0; }

  // (Registry links prev_/next_ below, with the other fields: their order sets the size.)

 private:
  void* allocate_locked(ms_space_t space, size_t bytes);
  // Whether a shared loader's class requests go to windows now; makes the class arena if need be.
  bool class_windows_locked();
  // Makes arenas_ (with the non-class arena) if missing; false with the error recorded.
  // `first_nonclass_request`: the non-class request (bytes) the arenas are made for, or 0 (a class
  // block, a pooled block's free, open). With one, a loader whose arenas go into its first
  // non-class chunk (arenas_in_first_chunk) takes that chunk, sized for both; failing, the
  // chunk manager's error (MS_ERR_LIMIT, a commit failure) is recorded and nothing changed.
  // Without one, the arenas come from the bookkeeping slab (MS_ERR_OUT_OF_MEMORY on failure).
  bool ensure_arenas(size_t first_nonclass_request = 0);
  // Boot and standard loaders whose inline paths are open (not shared, not checked, allocations
  // not counted): their arenas live in their first non-class chunk, made by their first
  // non-class allocation (loader_arenas.hpp), not at open.
  bool arenas_in_first_chunk() const {
    return kind() != MS_LOADER_MICRO && !shared() && !env().checked && !env().count_allocations;
  }
  // Also the class arena (loader_arenas.hpp), likewise.
  bool ensure_class_arena();
  LoaderArenasOptions arenas_options() const;
  void destroy_arenas();

  // The micro pool path (loader_metaspace.cpp, "pooled blocks").
  // Null with *graduate set if the pool does not serve the loader any more (no error set).
  void* allocate_pooled(ms_space_t space, size_t bytes, bool* graduate);
  ms_error_t deallocate_pooled(void* p, size_t n);
  // Bytes of the loader's runs lying in each space.
  void pooled_bytes(size_t out[2]) const;
  // At death: out of the space counters, then the runs go back to the pool.
  void release_pooled();
  void add_pooled_stats(LoaderStats& s) const;
  bool verify_pooled() const;
  ms_space_t space_of(const void* p) const {
    return env().class_space.contains(p) ? MS_SPACE_CLASS : MS_SPACE_NONCLASS;
  }
  SpaceUsage& usage(ms_space_t space) const;

  void add_arena_stats(LoaderStats& s) const;
  // A shared loader's windows, or null. Only loaders that are not micro have windows; their
  // arenas_ is set at open and stays until close, so it can be read without the lock (a micro
  // loader's may appear at graduation).
  SharedWindows* windows() const {
    return shared() && kind() != MS_LOADER_MICRO && arenas_ != nullptr ? arenas_->windows
                                                                      : nullptr;
  }
  // Whether the arenas keep the pooled blocks' figures from the loader's first block: checked
  // mode fences pooled blocks from the first one, and counting counts them.
  bool keeps_pooled_figures() const { return env().checked || env().count_allocations; }
  // The owner of a loader that is not shared may free and reuse class arena blocks without the
  // lock (Arena::owner_deallocate / owner_reuse decide which); only it calls the loader, one
  // call at a time, so arenas_ cannot change under it.
  bool owner_may_skip_lock() const {
    return !shared() && alive_ && arenas_ != nullptr && arenas_->has_class();
  }

  bool graduated() const { return (kind_bits() & kGraduatedBit) != 0; }

  // 128 bytes in all: the head (72), one word of magic, lock, state, tag and kind, the two 4-byte
  // registry links, the arenas pointer, the record (32). 31 to a slab page (28 at 144 bytes, when
  // the object named its environment and its links were pointers).
  static constexpr uint32_t kMagic = 0x4C4F4144u;  // "LOAD"
  const uint32_t magic_ = kMagic;
  LoaderLock lock_;
  bool alive_ = false;
  uint8_t tag_ = 0;  // the handle's low bits (handle())
  // The kind | kSharedBit for MS_LOADER_SHARED, | kGraduatedBit, | kKeptDeadBit. Atomic because
  // a shared loader's threads read kind and shared without the lock (allocate_in_window) while
  // one of them, under the lock, may set kGraduatedBit in the same byte (TSan caught it in CI).
  // Relaxed loads: those two bits do not change during a life, and the byte is still 1 byte.
  std::atomic<uint8_t> kind_{MS_LOADER_STANDARD};
  uint8_t kind_bits() const { return kind_.load(std::memory_order_relaxed); }
  static constexpr uint8_t kSharedBit = 0x80;
  // Its blocks, of both spaces, come from its arenas for good (no longer from the micro pool).
  static constexpr uint8_t kGraduatedBit = 0x40;
  static constexpr uint8_t kKeptDeadBit = 0x20;
  static constexpr uint8_t kKindMask = 0x1F;
  // What every loader of the metaspace shares: the header of the slab page holding this object
  // names it (the metaspace sets it as its loader slabs' page owner), 8 bytes a loader object
  // does not carry. As many dependent loads as a field (the page header's line instead of the
  // object's), and only on the library's paths.
  const LoaderEnvironment& env() const {
    return *static_cast<const LoaderEnvironment*>(SlabAllocator::page_owner_of(this));
  }

 public:
  // Registry links (owned by the metaspace, under its registry lock): 4 bytes each
  // (common/relative_link.hpp), loader objects being slab objects of one range.
  RelativeLink<LoaderMetaspace> prev_;
  RelativeLink<LoaderMetaspace> next_;

 private:
  LoaderArenas* arenas_ = nullptr;  // null until needed (see loader_arenas.hpp)
  MicroRecord micro_;
};

}  // namespace metaspace
