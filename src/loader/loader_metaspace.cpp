#include "loader/loader_metaspace.hpp"

#include <cstring>
#include <mutex>

#include "arena/fence.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

LoaderMetaspace::LoaderMetaspace(const LoaderEnvironment& env) {
  MS_ASSERT(&this->env() == &env, "loader object %p not made by its metaspace's loader slabs",
            (void*)this);
  (void)env;
  // The head field by field: a stale handle to this object (its former loader's) reads the
  // cookie word without a lock, and so does the slab's free list; every access to that word is
  // atomic (relaxed), so the word is never a plain store that TSan sees race with them.
  __atomic_store_n(&cookie, uintptr_t{0}, __ATOMIC_RELAXED);
  for (ms__bump& b : bump) b = ms__bump{};
  for (uint32_t& f : fit_max) f = 0;
  bins = nullptr;
}

LoaderMetaspace::~LoaderMetaspace() {
  MS_ASSERT(micro_.empty(), "loader object freed while it holds pooled bytes");
  destroy_arenas();
}

LoaderArenasOptions LoaderMetaspace::arenas_options() const {
  const ClassSpace& cs = env().class_space;
  return LoaderArenasOptions{.kind = kind(),
                             .class_alignment = size_t{1} << cs.shift(),
                             .class_lo = reinterpret_cast<const char*>(cs.base()),
                             .class_hi = reinterpret_cast<const char*>(cs.base() + cs.bytes()),
                             .fast_path = (kind_bits() & kSharedBit) == 0,
                             .checked = env().checked,
                             .count_allocations = env().count_allocations};
}

bool LoaderMetaspace::ensure_arenas(size_t first_nonclass_request) {
  if (arenas_ != nullptr) return true;
  size_t n = align_up(first_nonclass_request, kWordBytes);
  ChunkManager& nonclass = env().nonclass.chunks();
  if (n != 0 && arenas_in_first_chunk() && LoaderArenas::fits_first_chunk(nonclass.geometry(), n)) {
    arenas_ = LoaderArenas::create_in_first_chunk(nonclass, *this, arenas_options(), n);
    return arenas_ != nullptr;  // the chunk manager's error is recorded
  }
  arenas_ = LoaderArenas::create_in_bookkeeping(env().nonclass.bookkeeping(), nonclass, *this,
                                                arenas_options());
  if (arenas_ == nullptr) return false;  // MS_ERR_OUT_OF_MEMORY is recorded
  if (keeps_pooled_figures() &&
      arenas_->ensure_pooled(env().nonclass.bookkeeping()) == nullptr) {
    destroy_arenas();
    return false;
  }
  return true;
}

bool LoaderMetaspace::ensure_class_arena() {
  return ensure_arenas() &&
         arenas_->make_class(env().nonclass.bookkeeping(), env().class_space.context().chunks(),
                             *this, arenas_options());
}

void LoaderMetaspace::destroy_arenas() {
  if (arenas_ == nullptr) return;
  if (arenas_->windows != nullptr) {
    __atomic_store_n(&bump[MS_SPACE_NONCLASS].spare, uint64_t{0}, __ATOMIC_RELAXED);
    arenas_->windows->release_locked(env().nonclass.bookkeeping());
    SharedWindows::destroy(env().nonclass.bookkeeping(), arenas_->windows);
    arenas_->windows = nullptr;
  }
  arenas_->destroy_class(env().nonclass.bookkeeping());
  arenas_->destroy_pooled(env().nonclass.bookkeeping());
  // In its first chunk, the object goes before that chunk does (LoaderArenas::destroy).
  LoaderArenas::destroy(arenas_, env().nonclass.bookkeeping(), env().nonclass.chunks());
  arenas_ = nullptr;
}

bool LoaderMetaspace::open(ms_loader_kind_t kind, unsigned flags) {
  kind_.store(static_cast<uint8_t>(kind | ((flags & MS_LOADER_SHARED) != 0 ? kSharedBit : 0)),
              std::memory_order_relaxed);
  micro_ = MicroRecord{};
  for (ms__bump& b : bump) {
    __atomic_store_n(&b.top, nullptr, __ATOMIC_RELAXED);
    __atomic_store_n(&b.end, nullptr, __ATOMIC_RELAXED);
  }
  for (uint32_t& f : fit_max) __atomic_store_n(&f, 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&bins, nullptr, __ATOMIC_RELAXED);
  // Micro loaders make their arenas when they graduate; in checked mode they need the part that
  // keeps their pooled blocks' fences from the start, and while allocations are counted the
  // part that counts their pooled blocks (a 320-byte slab slot and the pooled figures more per
  // micro loader: the counting mode's price, with the closed fast path). Loaders whose arenas
  // go into their first non-class chunk make them with their first allocation that needs them:
  // creation takes no chunk memory (and cannot fail for want of it).
  if ((kind != MS_LOADER_MICRO || keeps_pooled_figures()) && !arenas_in_first_chunk() &&
      !ensure_arenas()) {
    return false;
  }
  if (shared() && !env().checked && kind != MS_LOADER_MICRO && arenas_ != nullptr) {
    // A loader that cannot have its windows is refused like one without arenas: creation met
    // the failure, so it says so (MS_ERR_OUT_OF_MEMORY) and leaves nothing behind.
    arenas_->windows = SharedWindows::create(env().nonclass.bookkeeping(), lock_);
    if (arenas_->windows == nullptr) {
      destroy_arenas();
      return false;
    }
    uint64_t key = arenas_->windows->open(env().count_allocations);
    __atomic_store_n(&bump[MS_SPACE_NONCLASS].spare, key, __ATOMIC_RELAXED);
  }
  alive_ = true;
  return true;
}

ms_error_t LoaderMetaspace::close() {
  std::lock_guard<LoaderLock> guard(lock_);
  ms_error_t result = MS_OK;
  if (env().checked) {
    for (ms_space_t s : {MS_SPACE_CLASS, MS_SPACE_NONCLASS}) {
      if (s == MS_SPACE_CLASS && !arenas_->has_class()) continue;
      ms_error_t e = arenas_->of(s).check_fences();
      if (result == MS_OK) result = e;
    }
    ms_error_t e = arenas_->pooled()->fences.check(
        this, [this](const void* p, size_t n) { return micro_.holds(p, n); });
    if (result == MS_OK) result = e;
    if (arenas_->has_class()) arenas_->of(MS_SPACE_CLASS).zap();
    arenas_->of(MS_SPACE_NONCLASS).zap();
    micro_.for_each_run([](char* p, size_t n) { std::memset(p, Fence::kZapDead, n); });
  }
  alive_ = false;
  release_pooled();
  destroy_arenas();
  return result;
}

void* LoaderMetaspace::allocate(ms_space_t space, size_t bytes) {
  if (space != MS_SPACE_NONCLASS && space != MS_SPACE_CLASS) {
    fail(MS_ERR_INVALID_ARGUMENT, "space %d is neither class nor non-class", space);
    return nullptr;
  }
  if (bytes == 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "allocation of 0 bytes");
    return nullptr;
  }
  size_t limit = Arena::largest_request(env().nonclass.chunks().geometry().root_bytes(),
                                        env().checked);
  if (bytes > limit) {
    fail(MS_ERR_TOO_LARGE, "%zu bytes requested; the largest block is a root chunk (%zu bytes)",
         bytes, limit);
    return nullptr;
  }
  // Shared loaders: small requests go to the calling thread's window (no lock), and take the
  // lock only for a new window (shared_windows.hpp). The C API (ms_allocate_slow, the only
  // caller) has tried the window before it gets here, so this call needs a new one.
  SharedWindows* windows = this->windows();
  size_t n = align_up(bytes, kWordBytes);
  bool windowed = windows != nullptr && n <= SharedWindows::kMaxWindowRequest;
  std::lock_guard<LoaderLock> guard(lock_);
  if (!alive_) {
    fail(MS_ERR_DESTROYED, "allocation from a destroyed loader");
    return nullptr;
  }
  if (windowed && (space == MS_SPACE_NONCLASS || class_windows_locked())) {
    return windows->refill_locked(space, arenas_->of(space), env().nonclass.bookkeeping(), n);
  }
  return allocate_locked(space, bytes);
}

bool LoaderMetaspace::class_windows_locked() {
  MS_ASSERT_LOCKED(lock_);
  // Klasses go to windows only at 8-byte class alignment (a window hands out blocks at 8; the
  // class arena files a larger alignment's gaps with its sibling) and once the micro pool does not
  // take them. In the size mix one request in 38 is a Klass, which would otherwise take the lock.
  return (size_t{1} << env().class_space.shift()) == kWordBytes && !pools(MS_SPACE_CLASS) &&
         ensure_class_arena();
}

bool LoaderMetaspace::pools(ms_space_t space) const {
  if (graduated()) return false;
  switch (kind()) {
    case MS_LOADER_MICRO: return true;
    // A standard loader's Klasses (loader_metaspace.hpp), on two conditions:
    // - 8-byte class alignment: with a larger one the class arena hands the gaps in front of
    //   its Klasses to non-class requests; the pool cannot.
    // - shared chunks of at most 4 KiB (the default granule of the reclaim policies that give
    //   memory back). A shared chunk goes back only when no live loader holds bytes in it; a
    //   private class chunk is reused whole after its loader's death. The larger the shared
    //   chunk, the more loaders share it: with reclaim none's 64 KiB, loaders killed at the cap
    //   (tests/fault/limits_test.cpp) leave their pooled Klasses in chunks their neighbours
    //   hold, and only the holes (micro_pool.hpp) give that room back to new loaders.
    case MS_LOADER_STANDARD:
      return space == MS_SPACE_CLASS && (size_t{1} << env().class_space.shift()) == kWordBytes &&
             env().pool.chunk_bytes() <= kMaxSharedChunkForKlasses;
    case MS_LOADER_BOOT: break;
  }
  return false;
}

void* LoaderMetaspace::allocate_locked(ms_space_t space, size_t bytes) {
  MS_ASSERT_LOCKED(lock_);
  if (pools(space)) {
    bool graduate = false;
    void* p = allocate_pooled(space, bytes, &graduate);
    if (!graduate) return p;
    // For good: its next blocks, of both spaces, come from its arenas.
    kind_.fetch_or(kGraduatedBit, std::memory_order_relaxed);
  }
  if (space == MS_SPACE_CLASS) {
    if (!ensure_class_arena()) return nullptr;
    return arenas_->of(space).allocate(bytes);
  }
  bool made_now = arenas_ == nullptr;
  if (!ensure_arenas(bytes)) return nullptr;
  void* p = arenas_->of(space).allocate(bytes);
  // A failed call changes nothing (docs/guarantees.md): arenas made for it go again. (In a
  // first chunk the request was committed with the chunk, so this is not expected there.)
  if (p == nullptr && made_now) {
    KeepLastError keep;
    destroy_arenas();
  }
  return p;
}

ms_error_t LoaderMetaspace::deallocate(void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) {
    return fail(MS_ERR_INVALID_ARGUMENT, "deallocation of %zu bytes at %p", bytes, p);
  }
  // (The C API has tried free_klass_without_lock first: a Klass free takes the lock only when
  // that declines it.)
  std::lock_guard<LoaderLock> guard(lock_);
  if (!alive_) return fail(MS_ERR_DESTROYED, "deallocation into a destroyed loader");
  // No block is larger than a root chunk; checked before rounding, which would wrap sizes from
  // SIZE_MAX - 6 up to 0 words.
  if (bytes > env().nonclass.chunks().geometry().root_bytes()) {
    return fail(MS_ERR_NOT_OWNED, "block %p of %zu bytes: larger than any block", p, bytes);
  }
  size_t n = align_up(bytes, kWordBytes);
  if (is_aligned(p, kWordBytes)) {
    if (micro_.holds(p, env().checked ? n + Fence::kBytes : n)) return deallocate_pooled(p, n);
    if (arenas_ != nullptr) {
      Arena& nonclass = arenas_->of(MS_SPACE_NONCLASS);
      // No class arena: a standard loader whose Klasses all came from the micro pool.
      Arena* klass = arenas_->has_class() ? &arenas_->of(MS_SPACE_CLASS) : nullptr;
      // Ask the arena whose chunks lie where p lies first: a class space block is in a class
      // chunk even when the non-class arena handed it out (a class alignment gap).
      bool in_class_space = env().class_space.contains(p);
      Arena* first = in_class_space && klass != nullptr ? klass : &nonclass;
      Arena* second = first == klass ? &nonclass : klass;
      if (first->owns(p, n, /*note_hint=*/true) ||
          (second != nullptr && second->owns(p, n, /*note_hint=*/true))) {
        // A block in class space at class alignment can hold a class again; anything else (a
        // non-class block living in a class gap, say) is only good for non-class requests.
        bool class_block = klass != nullptr && in_class_space && is_aligned(p, klass->alignment());
        return (class_block ? *klass : nonclass).deallocate(p, n);
      }
    }
  }
  return fail(MS_ERR_NOT_OWNED, "block %p (%zu bytes) was not allocated from this loader", p,
              bytes);
}

// ---- pooled blocks (micro loaders; see micro_pool.hpp) ----
//
// The loader keeps the space counters for its pooled bytes itself, at once (these are slow
// paths): used on allocation, deallocated blocks and fences as they come, all of it out again
// at death before its runs go back to the pool.

SpaceUsage& LoaderMetaspace::usage(ms_space_t space) const {
  return space == MS_SPACE_CLASS ? env().class_space.context().chunks().usage()
                                 : env().nonclass.chunks().usage();
}

void* LoaderMetaspace::allocate_pooled(ms_space_t space, size_t bytes, bool* graduate) {
  size_t n = align_up(bytes, kWordBytes);
  size_t fence = env().checked ? Fence::kBytes : 0;
  char* p = nullptr;
  switch (env().pool.allocate(micro_, space, n + fence, &p)) {
    case MicroPool::Result::kGraduate: *graduate = true; return nullptr;
    case MicroPool::Result::kFailed: return nullptr;
    case MicroPool::Result::kDone: break;
  }
  // Counted where it lies: a non-class block may sit in the class tail (micro_pool.hpp).
  ms_space_t lies_in = space_of(p);
  SpaceUsage& u = usage(lies_in);
  u.begin_update();
  u.increase(u.used_bytes, n);
  u.increase(u.fence_bytes, fence);
  u.end_update();
  if (fence != 0) {
    arenas_->pooled()->fences.install(p, n, n - bytes);
    arenas_->pooled()->fence_bytes[lies_in] += fence;
  }
  if (env().count_allocations) arenas_->pooled()->allocations++;  // made at open (ensure_arenas)
  return p;
}

void LoaderMetaspace::pooled_bytes(size_t out[2]) const {
  out[0] = out[1] = 0;
  micro_.for_each_run([&](char* p, size_t n) { out[space_of(p)] += n; });
}

ms_error_t LoaderMetaspace::deallocate_pooled(void* p, size_t n) {
  if (env().checked) {
    if (ms_error_t e = FenceList::check_free(this, p, n); e != MS_OK) return e;
  }
  // A pooled block is not reused: it stays charged to the loader, as a deallocated free block,
  // until the loader dies (micro loaders rarely free anything). The figures live with the arenas.
  if (!ensure_arenas()) return MS_ERR_OUT_OF_MEMORY;
  LoaderArenas::Pooled* made = arenas_->ensure_pooled(env().nonclass.bookkeeping());
  if (made == nullptr) return MS_ERR_OUT_OF_MEMORY;
  LoaderArenas::Pooled& pooled = *made;
  ms_space_t space = space_of(p);
  size_t held[2];
  pooled_bytes(held);
  // Outside checked mode a second free of the block is not recognised; it must not take more
  // out of the counters than the loader holds.
  if (pooled.freed_bytes[space] + pooled.fence_bytes[space] + n > held[space]) {
    return fail(MS_ERR_NOT_OWNED, "block %p (%zu bytes): more freed than allocated", p, n);
  }
  if (env().checked) FenceList::mark_freed(p, n);
  pooled.freed_bytes[space] += n;
  pooled.freed_count[space]++;
  SpaceUsage& u = usage(space);
  u.begin_update();
  u.decrease(u.used_bytes, n);
  u.increase(u.free_block_bytes[static_cast<int>(BlockOrigin::kDeallocated)], n);
  u.increase(u.free_block_count, 1);
  u.end_update();
  return MS_OK;
}

void LoaderMetaspace::release_pooled() {
  if (micro_.empty()) return;
  size_t held[2];
  pooled_bytes(held);
  for (ms_space_t space : {MS_SPACE_NONCLASS, MS_SPACE_CLASS}) {
    if (held[space] == 0) continue;
    size_t freed = 0, freed_count = 0, fences = 0;
    if (arenas_ != nullptr && arenas_->pooled() != nullptr) {
      const LoaderArenas::Pooled& pooled = *arenas_->pooled();
      freed = pooled.freed_bytes[space];
      freed_count = pooled.freed_count[space];
      fences = pooled.fence_bytes[space];
    }
    SpaceUsage& u = usage(space);
    u.begin_update();
    u.decrease(u.used_bytes, held[space] - freed - fences);
    u.decrease(u.free_block_bytes[static_cast<int>(BlockOrigin::kDeallocated)], freed);
    u.decrease(u.free_block_count, freed_count);
    u.decrease(u.fence_bytes, fences);
    u.end_update();
  }
  env().pool.release(micro_);
}

void LoaderMetaspace::add_pooled_stats(LoaderStats& s) const {
  size_t held[2];
  pooled_bytes(held);
  for (int sp = 0; sp < 2; sp++) {
    size_t freed = 0, fences = 0;
    if (arenas_ != nullptr && arenas_->pooled() != nullptr) {
      const LoaderArenas::Pooled& pooled = *arenas_->pooled();
      freed = pooled.freed_bytes[sp];
      fences = pooled.fence_bytes[sp];
      s.arena[sp].free_blocks_count += pooled.freed_count[sp];
    }
    s.pooled_bytes[sp] = held[sp];
    s.arena[sp].consumed_bytes += held[sp];
    s.arena[sp].committed_bytes += held[sp];
    s.arena[sp].capacity_bytes += held[sp];
    s.arena[sp].free_blocks_bytes += freed;
    s.arena[sp].fence_bytes += fences;
    s.free_bytes_by_space_origin[sp][static_cast<int>(BlockOrigin::kDeallocated)] += freed;
    s.free_blocks_bytes[sp] += freed;
    s.fence_bytes[sp] += fences;
    s.used_bytes[sp] += held[sp] - freed - fences;
  }
}

bool LoaderMetaspace::verify_pooled() const {
  const MicroPool& pool = env().pool;
  bool ok = true;
  micro_.for_each_run([&](char* p, size_t n) {
    if (!ok) return;
    ms_space_t sp = space_of(p);
    const ChunkManager& cm = sp == MS_SPACE_CLASS ? env().class_space.context().chunks()
                                                  : env().nonclass.chunks();
    const Chunk* c = cm.chunk_containing(p);
    ok = c != nullptr && c->owner_is(&pool) && p + n <= c->end();
    if (!ok) fail(MS_ERR_CORRUPTED, "loader %p: run %p (%zu bytes) not in a shared chunk",
                  (const void*)this, (void*)p, n);
    // Nor in the pool's free room: holes, the hole window, above a window's top.
    if (ok && !pool.clear_of_holes(p, n)) {
      ok = false;
      fail(MS_ERR_CORRUPTED, "loader %p: run %p (%zu bytes) overlaps free room of the pool",
           (const void*)this, (void*)p, n);
    }
  });
  if (!ok) return false;
  if (arenas_ == nullptr) return true;
  MS_VERIFY(!env().checked || arenas_->pooled() != nullptr,
            "loader %p: checked mode without its pooled blocks' fence list", (const void*)this);
  if (arenas_->pooled() == nullptr) return true;
  size_t held[2];
  pooled_bytes(held);
  const LoaderArenas::Pooled& pooled = *arenas_->pooled();
  for (int sp = 0; sp < 2; sp++) {
    MS_VERIFY(pooled.freed_bytes[sp] + pooled.fence_bytes[sp] <= held[sp],
              "loader %p: space %d: %zu pooled bytes freed and %zu in fences of %zu held",
              (const void*)this, sp, pooled.freed_bytes[sp], pooled.fence_bytes[sp], held[sp]);
  }
  if (env().checked) {
    ms_error_t e = pooled.fences.check(this, [this](const void* p, size_t n) {
      return micro_.holds(p, n);
    });
    if (e != MS_OK) return false;
  }
  return true;
}

// ---- statistics ----

void LoaderMetaspace::add_arena_stats(LoaderStats& s) const {
  if (arenas_ == nullptr) return;
  s.arena[MS_SPACE_NONCLASS] = arenas_->of(MS_SPACE_NONCLASS).stats_locked();
  if (arenas_->has_class()) s.arena[MS_SPACE_CLASS] = arenas_->of(MS_SPACE_CLASS).stats_locked();
  const ArenaStats& nc = s.arena[MS_SPACE_NONCLASS];
  const ArenaStats& cl = s.arena[MS_SPACE_CLASS];
  // Non-class free blocks that lie in class space are class-space memory.
  constexpr BlockWhere kOwn = BlockWhere::kOwnSpace, kOther = BlockWhere::kOtherSpace;
  for (int o = 0; o < kBlockOrigins; o++) {
    BlockOrigin origin = static_cast<BlockOrigin>(o);
    s.free_bytes_by_space_origin[MS_SPACE_NONCLASS][o] = nc.free_bytes(kOwn, origin);
    s.free_bytes_by_space_origin[MS_SPACE_CLASS][o] =
        nc.free_bytes(kOther, origin) + cl.free_bytes(kOwn, origin) + cl.free_bytes(kOther, origin);
  }
  s.free_blocks_bytes[MS_SPACE_NONCLASS] = nc.free_blocks_bytes - nc.foreign_free_bytes;
  s.free_blocks_bytes[MS_SPACE_CLASS] = cl.free_blocks_bytes + nc.foreign_free_bytes;
  // Likewise the fences of non-class blocks taken from class space gaps (checked mode).
  s.fence_bytes[MS_SPACE_NONCLASS] = nc.fence_bytes - nc.foreign_fence_bytes;
  s.fence_bytes[MS_SPACE_CLASS] = cl.fence_bytes + nc.foreign_fence_bytes;
  // The arenas' own bytes at the start of the first non-class chunk are overhead, not used.
  s.used_bytes[MS_SPACE_NONCLASS] = nc.consumed_bytes - s.free_blocks_bytes[MS_SPACE_NONCLASS] -
                                    s.fence_bytes[MS_SPACE_NONCLASS] - nc.home_prefix_bytes;
  s.used_bytes[MS_SPACE_CLASS] =
      cl.consumed_bytes - s.free_blocks_bytes[MS_SPACE_CLASS] - s.fence_bytes[MS_SPACE_CLASS];
}

LoaderStats LoaderMetaspace::stats_locked() const {
  MS_ASSERT_LOCKED(lock_);
  MS_ASSERT_LOCKED(env().nonclass.chunks().lock());
  MS_ASSERT_LOCKED(env().class_space.context().chunks().lock());
  LoaderStats s;
  s.handle = reinterpret_cast<const void*>(handle());
  s.kind = kind();
  s.destroyed = !alive_;
  if (!alive_) return s;
  s.allocations_counted = env().count_allocations;
  if (s.allocations_counted && arenas_ != nullptr) {
    // Every block went through the library: the arenas' (including each shared window's
    // carving), the windows' bumps past their carving, the pooled ones.
    s.allocations = arenas_->of(MS_SPACE_NONCLASS).allocations();
    if (arenas_->has_class()) s.allocations += arenas_->of(MS_SPACE_CLASS).allocations();
    if (arenas_->windows != nullptr) s.allocations += arenas_->windows->extra_allocations_locked();
    if (arenas_->pooled() != nullptr) s.allocations += arenas_->pooled()->allocations;
  }
  add_arena_stats(s);
  add_pooled_stats(s);
  return s;
}

LoaderStats LoaderMetaspace::stats() {
  std::lock_guard<LoaderLock> guard(lock_);
  std::lock_guard<std::mutex> nc(env().nonclass.chunks().lock());
  std::lock_guard<std::mutex> cl(env().class_space.context().chunks().lock());
  return stats_locked();
}

void LoaderMetaspace::fold_usage_locked() {
  MS_ASSERT_LOCKED(lock_);
  if (!alive_ || arenas_ == nullptr) return;
  if (arenas_->has_class()) arenas_->of(MS_SPACE_CLASS).fold_usage();
  // Its blocks in class gaps leave the class counters after the class arena's fold.
  arenas_->of(MS_SPACE_NONCLASS).fold_usage();
}

bool LoaderMetaspace::verify_locked() const {
  MS_ASSERT_LOCKED(lock_);
  if (!alive_) return true;
  // Arenas in the first non-class chunk: only for the loaders that may have them, at the start
  // of a chunk their non-class arena holds as its oldest (Arena::verify checks the prefix).
  if (arenas_ != nullptr && arenas_->home() == LoaderArenas::Home::kFirstChunk) {
    MS_VERIFY(arenas_in_first_chunk() && arenas_->verify_home(),
              "loader %p: arenas %p are not at the start of its first non-class chunk",
              (const void*)this, (const void*)arenas_);
  }
  if (arenas_ != nullptr &&
      !(arenas_->of(MS_SPACE_NONCLASS).verify() &&
        (!arenas_->has_class() || arenas_->of(MS_SPACE_CLASS).verify()))) {
    return false;
  }
  uint64_t key = windows() != nullptr ? windows()->key() : 0;
  MS_VERIFY(window_key() == key, "loader %p: its head names windows' key %#llx, its windows %#llx",
            (const void*)this, (unsigned long long)window_key(), (unsigned long long)key);
  if (arenas_ != nullptr && arenas_->windows != nullptr &&
      !arenas_->windows->verify_locked(
          arenas_->of(MS_SPACE_NONCLASS),
          arenas_->has_class() ? &arenas_->of(MS_SPACE_CLASS) : nullptr)) {
    return false;
  }
  return verify_pooled();
}

}  // namespace metaspace
