// A loader metaspace: what a runtime creates per class loader. It pairs a class arena (in the
// compressed class space) with a non-class arena, both with growth policies chosen by the
// loader kind. Class alignment gaps and class chunk tails go to the non-class arena's free
// blocks, so a large class alignment costs address space, not memory.
//
// Layout: the public fast-path head (two bump windows) comes first, so that the handle the
// runtime holds is also what the inline ms_allocate reads.
//
// Locking: `lock_` (loader_lock.hpp) excludes the owner's out-of-line calls from statistics and
// from each other; for a loader that is not shared the owner only flips its gate. Fast-path bumps
// of loaders that are not shared run without it; they only move `top` within already committed
// memory.
#pragma once

#include <metaspace/metaspace.h>

#include <mutex>
#include <optional>

#include "arena/arena.hpp"
#include "context/class_space.hpp"
#include "context/context.hpp"
#include "loader/loader_lock.hpp"
#include "loader/shared_windows.hpp"

namespace metaspace {

struct LoaderStats {
  const void* handle = nullptr;      // the runtime's ms_loader_t*, to name the loader in reports
  bool destroyed = false;
  ms_loader_kind_t kind = MS_LOADER_STANDARD;
  uint64_t allocations = 0;
  ArenaStats arena[2];
  size_t used_bytes[2] = {};         // by where the memory lies
  size_t free_blocks_bytes[2] = {};  // by where the memory lies
  size_t fence_bytes[2] = {};        // by where the memory lies
  size_t free_bytes_by_origin[2][kBlockOrigins] = {};  // [space where it lies][BlockOrigin]
};

class LoaderMetaspace : public ms__loader_head {
 public:
  // `owner` is passed to the GC threshold callback, which runs after the loader lock is released.
  LoaderMetaspace(Context& nonclass, ClassSpace& class_space, CommitLimiter& limiter,
                  ms_metaspace_t* owner);

  // A handle that does not carry this is not a loader (a stray pointer, or freed memory).
  bool valid_handle() const { return magic_ == kMagic; }

  // Gives the (recycled) object a life: creates its arenas.
  void open(ms_loader_kind_t kind, unsigned flags, bool checked);
  // Ends it: every chunk goes back. The object stays valid (and detectably dead) until reused.
  // In checked mode the fences are checked first (the first overrun found is returned, the
  // loader dies all the same) and the memory is zapped.
  ms_error_t close();
  bool alive() const { return alive_; }

  void* allocate(ms_space_t space, size_t bytes);
  ms_error_t deallocate(void* p, size_t bytes);

  LoaderLock& lock() { return lock_; }
  // Caller holds lock() and both chunk managers' locks.
  LoaderStats stats_locked() const;
  // Takes the locks itself.
  LoaderStats stats();
  // Folds both arenas' state into the space counters (Arena::fold_usage). Caller holds lock().
  void fold_usage_locked();
  ms_metaspace_t* owner() const { return owner_; }
  // Caller holds lock().
  bool verify_locked() const;

  ms_loader_kind_t kind() const { return kind_; }

  // Registry links (owned by the metaspace, under its registry lock).
  LoaderMetaspace* prev_ = nullptr;
  LoaderMetaspace* next_ = nullptr;

 private:
  Arena& arena(ms_space_t space) { return space == MS_SPACE_CLASS ? *class_ : *nonclass_; }

  static constexpr uint64_t kMagic = 0x4C4F414445524D53ull;  // "LOADERMS"
  const uint64_t magic_ = kMagic;
  Context& nonclass_context_;
  ClassSpace& class_space_;
  CommitLimiter& limiter_;
  ms_metaspace_t* const owner_;
  LoaderLock lock_;
  bool alive_ = false;
  bool shared_ = false;  // MS_LOADER_SHARED: every call takes the full lock
  bool checked_ = false;
  ms_loader_kind_t kind_ = MS_LOADER_STANDARD;
  // Shared loaders: the threads' allocation windows in the non-class arena, from the space's
  // bookkeeping (a pointer: loader objects sit at the top of their 768-byte slab class). Null
  // for other loaders, and if it could not be made (the loader then serializes every call).
  SharedWindows* windows_ = nullptr;
  // Destroyed in reverse order: the class arena hands wastage to the non-class one.
  std::optional<Arena> nonclass_;
  std::optional<Arena> class_;
};

}  // namespace metaspace
