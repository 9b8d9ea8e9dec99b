#include "loader/loader_metaspace.hpp"

#include "arena/fence.hpp"

#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"

namespace metaspace {

LoaderMetaspace::LoaderMetaspace(Context& nonclass, ClassSpace& class_space,
                                 CommitLimiter& limiter, ms_metaspace_t* owner)
    : ms__loader_head{},
      nonclass_context_(nonclass),
      class_space_(class_space),
      limiter_(limiter),
      owner_(owner) {}

void LoaderMetaspace::open(ms_loader_kind_t kind, unsigned flags, bool checked) {
  kind_ = kind;
  checked_ = checked;
  shared_ = (flags & MS_LOADER_SHARED) != 0;
  bool fast = (flags & MS_LOADER_SHARED) == 0 && !checked;
  ChunkManager& nc = nonclass_context_.chunks();
  ChunkManager& cc = class_space_.context().chunks();
  size_t class_alignment = size_t{1} << class_space_.shift();
  nonclass_.emplace(nc, GrowthPolicy::for_loader(kind, MS_SPACE_NONCLASS, nc.geometry()),
                    kWordBytes, &bump[MS_SPACE_NONCLASS], fast, nullptr, checked);
  nonclass_->set_foreign_range(
      reinterpret_cast<const char*>(class_space_.base()),
      reinterpret_cast<const char*>(class_space_.base() + class_space_.bytes()));
  // With 8-byte class alignment nothing is lost to gaps and tails can stay in class space.
  Arena* wastage = class_alignment > kWordBytes ? &*nonclass_ : nullptr;
  class_.emplace(cc, GrowthPolicy::for_loader(kind, MS_SPACE_CLASS, cc.geometry()),
                 class_alignment, &bump[MS_SPACE_CLASS], fast, wastage, checked);
  __atomic_store_n(&bump[0].allocs, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&bump[1].allocs, 0, __ATOMIC_RELAXED);
  if (shared_ && !checked) {
    windows_ = nonclass_context_.bookkeeping().create<SharedWindows>();
    if (windows_ != nullptr) {
      windows_->open();
    } else {
      clear_error();  // without windows the loader still works, serialized
    }
  }
  alive_ = true;
}

ms_error_t LoaderMetaspace::close() {
  std::lock_guard<LoaderLock> guard(lock_);
  ms_error_t result = MS_OK;
  if (checked_) {
    for (Arena* a : {&*class_, &*nonclass_}) {
      ms_error_t e = a->check_fences();
      if (result == MS_OK) result = e;
    }
    class_->zap();
    nonclass_->zap();
  }
  alive_ = false;
  if (windows_ != nullptr) {
    windows_->release_locked(nonclass_context_.bookkeeping());
    nonclass_context_.bookkeeping().destroy(windows_);
    windows_ = nullptr;
  }
  class_.reset();
  nonclass_.reset();
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
  size_t limit = nonclass_context_.chunks().geometry().root_bytes();
  // Checked mode puts a fence behind every block, and block and fence share one chunk.
  if (checked_) limit -= Fence::kBytes;
  if (bytes > limit) {
    fail(MS_ERR_TOO_LARGE, "%zu bytes requested; the largest block is a root chunk (%zu bytes)",
         bytes, limit);
    return nullptr;
  }
  // Shared loaders: small non-class requests go to the calling thread's window (no lock), and
  // take the lock only for a new window (shared_windows.hpp).
  size_t n = align_up(bytes, kWordBytes);
  bool windowed = windows_ != nullptr && space == MS_SPACE_NONCLASS &&
                  n <= SharedWindows::kMaxWindowRequest;
  if (windowed) {
    if (void* p = windows_->try_bump(n, nonclass_->fit_max())) return p;
  }
  auto attempt = [&]() -> void* {
    OwnerScope guard(lock_, shared_);
    if (!alive_) {
      fail(MS_ERR_DESTROYED, "allocation from a destroyed loader");
      return nullptr;
    }
    // A free block that could hold the request goes first (best fit), as on the fast path.
    if (windowed && n > nonclass_->fit_max()) {
      return windows_->refill_locked(*nonclass_, nonclass_context_.bookkeeping(), n);
    }
    return arena(space).allocate(bytes);
  };
  void* p = attempt();
  // A cap refusal is reported to the runtime (outside the lock) before it is returned; its GC
  // may have made room, so the request is tried once more.
  bool told = limiter_.deliver_threshold_event(owner_);
  if (p == nullptr && told && ms_last_error() == MS_ERR_LIMIT) {
    p = attempt();
    limiter_.deliver_threshold_event(owner_);
  }
  return p;
}

ms_error_t LoaderMetaspace::deallocate(void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) {
    return fail(MS_ERR_INVALID_ARGUMENT, "deallocation of %zu bytes at %p", bytes, p);
  }
  OwnerScope guard(lock_, shared_);
  if (!alive_) return fail(MS_ERR_DESTROYED, "deallocation into a destroyed loader");
  // No block is larger than a root chunk; checked before rounding, which would wrap sizes from
  // SIZE_MAX - 6 up to 0 words.
  if (bytes > nonclass_context_.chunks().geometry().root_bytes()) {
    return fail(MS_ERR_NOT_OWNED, "block %p of %zu bytes: larger than any block", p, bytes);
  }
  size_t n = align_up(bytes, kWordBytes);
  // Ask the arena whose chunks lie where p lies first: a class space block is in a class chunk
  // even when the non-class arena handed it out (a class alignment gap).
  bool in_class_space = class_space_.contains(p);
  Arena& first = in_class_space ? *class_ : *nonclass_;
  Arena& second = in_class_space ? *nonclass_ : *class_;
  if (!is_aligned(p, kWordBytes) || (!first.owns(p, n) && !second.owns(p, n))) {
    return fail(MS_ERR_NOT_OWNED, "block %p (%zu bytes) was not allocated from this loader", p,
                bytes);
  }
  // A block in class space at class alignment can hold a class again; anything else (a
  // non-class block living in a class gap, say) is only good for non-class requests.
  bool class_block = in_class_space && is_aligned(p, class_->alignment());
  return (class_block ? *class_ : *nonclass_).deallocate(p, n);
}

LoaderStats LoaderMetaspace::stats_locked() const {
  LoaderStats s;
  s.handle = static_cast<const ms__loader_head*>(this);
  s.kind = kind_;
  s.destroyed = !alive_;
  if (!alive_) return s;
  s.allocations = __atomic_load_n(&bump[0].allocs, __ATOMIC_RELAXED) +
                  __atomic_load_n(&bump[1].allocs, __ATOMIC_RELAXED) +
                  (windows_ != nullptr ? windows_->extra_allocations_locked() : 0);
  s.arena[MS_SPACE_NONCLASS] = nonclass_->stats_locked();
  s.arena[MS_SPACE_CLASS] = class_->stats_locked();
  const ArenaStats& nc = s.arena[MS_SPACE_NONCLASS];
  const ArenaStats& cl = s.arena[MS_SPACE_CLASS];
  // Non-class free blocks that lie in class space are class-space memory.
  for (int o = 0; o < kBlockOrigins; o++) {
    s.free_bytes_by_origin[MS_SPACE_NONCLASS][o] = nc.free_bytes_by_origin[o][0];
    s.free_bytes_by_origin[MS_SPACE_CLASS][o] =
        nc.free_bytes_by_origin[o][1] + cl.free_bytes_by_origin[o][0] + cl.free_bytes_by_origin[o][1];
  }
  s.free_blocks_bytes[MS_SPACE_NONCLASS] = nc.free_blocks_bytes - nc.foreign_free_bytes;
  s.free_blocks_bytes[MS_SPACE_CLASS] = cl.free_blocks_bytes + nc.foreign_free_bytes;
  // Likewise the fences of non-class blocks taken from class space gaps (checked mode).
  s.fence_bytes[MS_SPACE_NONCLASS] = nc.fence_bytes - nc.foreign_fence_bytes;
  s.fence_bytes[MS_SPACE_CLASS] = cl.fence_bytes + nc.foreign_fence_bytes;
  s.used_bytes[MS_SPACE_NONCLASS] =
      nc.consumed_bytes - s.free_blocks_bytes[MS_SPACE_NONCLASS] - s.fence_bytes[MS_SPACE_NONCLASS];
  s.used_bytes[MS_SPACE_CLASS] =
      cl.consumed_bytes - s.free_blocks_bytes[MS_SPACE_CLASS] - s.fence_bytes[MS_SPACE_CLASS];
  return s;
}

LoaderStats LoaderMetaspace::stats() {
  std::lock_guard<LoaderLock> guard(lock_);
  std::lock_guard<std::mutex> nc(nonclass_context_.chunks().lock());
  std::lock_guard<std::mutex> cl(class_space_.context().chunks().lock());
  return stats_locked();
}

void LoaderMetaspace::fold_usage_locked() {
  if (!alive_) return;
  class_->fold_usage();
  nonclass_->fold_usage();  // its blocks in class gaps leave the class counters after class_
}

bool LoaderMetaspace::verify_locked() const {
  if (!alive_) return true;
  return nonclass_->verify() && class_->verify() &&
         (windows_ == nullptr || windows_->verify_locked(*nonclass_));
}

}  // namespace metaspace
