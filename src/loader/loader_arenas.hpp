// The part of a loader that owns chunks: its class and non-class arenas, made separately from the
// loader object (from the space's bookkeeping) and only when needed — at creation for boot and
// standard loaders, at graduation for micro loaders (see micro_pool.hpp), which mostly never need
// it. It also keeps what a micro loader's pooled blocks need beyond the loader object's record:
// the blocks freed before the loader died and, in checked mode, their fences.
//
// A micro loader object is then 144 bytes of bookkeeping instead of 752 (two 280-byte arenas
// inline, including 104 bytes each of usage-fold state).
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

#include "arena/arena.hpp"
#include "arena/fence.hpp"
#include "arena/growth_policy.hpp"
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
};

class LoaderArenas {
 public:
  // `head`: the loader's public windows, which the arenas' fast path uses.
  LoaderArenas(ChunkManager& nonclass, ChunkManager& klass, ms__loader_head& head,
               const LoaderArenasOptions& options)
      : nonclass_(nonclass, GrowthPolicy::for_loader(options.kind, MS_SPACE_NONCLASS,
                                                     nonclass.geometry()),
                  ArenaOptions{.head = &head,
                               .space = MS_SPACE_NONCLASS,
                               .fast_path = options.fast_path,
                               .inline_free = true,
                               .checked = options.checked}),
        // With 8-byte class alignment nothing is lost to gaps and tails can stay in class space.
        class_(klass, GrowthPolicy::for_loader(options.kind, MS_SPACE_CLASS, klass.geometry()),
               ArenaOptions{.alignment = options.class_alignment,
                            .head = &head,
                            .space = MS_SPACE_CLASS,
                            .fast_path = options.fast_path,
                            .wastage = options.class_alignment > kWordBytes ? &nonclass_ : nullptr,
                            .checked = options.checked}) {
    nonclass_.set_foreign_range(options.class_lo, options.class_hi);
  }

  Arena& of(ms_space_t space) { return space == MS_SPACE_CLASS ? class_ : nonclass_; }
  const Arena& of(ms_space_t space) const { return space == MS_SPACE_CLASS ? class_ : nonclass_; }

  // A micro loader's pooled blocks, by the space they lie in: freed before the loader's death
  // (they stay charged to it until then, counted as deallocated free blocks), and fences.
  struct Pooled {
    size_t freed_bytes[2] = {};
    size_t freed_count[2] = {};
    size_t fence_bytes[2] = {};
    FenceList fences;
  };
  Pooled& pooled() { return pooled_; }
  const Pooled& pooled() const { return pooled_; }

  // A shared loader's per-thread allocation windows (shared_windows.hpp), or null: not shared, or
  // checked mode (every call then takes the loader lock). Kept here rather than in the loader
  // object, which micro loaders keep small.
  SharedWindows* windows = nullptr;

 private:
  // Destroyed in reverse order: the class arena hands wastage to the non-class one.
  Arena nonclass_;
  Arena class_;
  Pooled pooled_;
};

}  // namespace metaspace
