// The loader handles of one metaspace, the whole concept in one place: which loaders live, what
// their handles are, and how a handle that names no live loader is refused.
//
// - A handle is the address of the loader's object (16-byte aligned) plus a tag in its low 4
//   bits (MS__HANDLE_TAG_MASK, metaspace/detail/loader_head.h), one of kHandleTags.
// - The object's first word, its cookie, is handle ^ ms__handle_secret while the loader lives and
//   0 otherwise: the inline fast path serves a handle only if the word matches, and the library's
//   handle checks compare it too (carries). The secret is chosen once per process, before the
//   first loader exists (choose_handle_secret).
// - When a loader dies its object is reused at once and its handle joins the dead handles
//   (DeadHandles, the last kDeadHandlesRemembered), so a stale handle gets MS_ERR_DESTROYED; a
//   new loader's tag is chosen so that its handle is none of them.
// - Kept objects: dead loaders whose handles found no room among the dead handles (their
//   bookkeeping refused); the objects stay, marked, and refuse their handles themselves until a
//   later death finds room for them all.
// - Parked objects: objects all of whose tags name dead handles; they wait until purge() finds
//   one of their handles forgotten.
//
// Lock order (never the reverse): registry → loader → chunk manager (non-class, then class).
#pragma once

#include <metaspace/detail/loader_head.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/mutex.hpp"
#include "instance/dead_handles.hpp"
#include "instance/loader_object_queue.hpp"
#include "loader/loader_metaspace.hpp"
#include "slab/slab_allocator.hpp"

namespace metaspace {

// Chooses ms__handle_secret once per process (later calls do nothing), before the first
// metaspace, and so any loader, exists.
void choose_handle_secret();

// The cookie of a live loader with this handle.
inline uintptr_t handle_cookie(uintptr_t handle) { return handle ^ ms__handle_secret; }

// Whether the object carries `handle`: its loader is alive and this is its handle (the check of
// the inline paths). Atomic: a stale handle's object may be reused meanwhile.
inline bool carries(const LoaderMetaspace* l, uintptr_t handle) {
  return __atomic_load_n(&l->cookie, __ATOMIC_RELAXED) == handle_cookie(handle);
}

class LoaderRegistry {
 public:
  // A handle used after its loader's destruction gets MS_ERR_DESTROYED until this many more
  // loaders of the metaspace died (docs/guarantees.md).
  static constexpr size_t kDeadHandlesRemembered = DeadHandles::kRemembered;

  // Loader objects come from `objects` (a range of their own, whose pages name `env`); the dead
  // handles live in `bookkeeping`.
  LoaderRegistry(SlabAllocator& objects, const LoaderEnvironment& env, SlabAllocator& bookkeeping);
  // Closes every live loader and frees every object.
  ~LoaderRegistry();
  LoaderRegistry(const LoaderRegistry&) = delete;
  LoaderRegistry& operator=(const LoaderRegistry&) = delete;

  // A new loader, its cookie set: l->handle() is its handle. Null with the error recorded
  // (MS_ERR_INVALID_ARGUMENT for a kind or flags out of range, MS_ERR_OUT_OF_MEMORY).
  LoaderMetaspace* create(ms_loader_kind_t kind, unsigned flags);
  // Clears the cookie (the inline paths refuse the handle from now on), closes the loader and
  // reuses or keeps its object; MS_ERR_DESTROYED if it was dead already.
  ms_error_t destroy(LoaderMetaspace* l);
  // A handle whose object does not carry it: MS_ERR_DESTROYED (recorded) if it is a dead one
  // (remembered, or a kept object's), else MS_ERR_INVALID_ARGUMENT.
  ms_error_t refuse(uintptr_t handle);
  // The live loader `handle` names, returned with its lock held (the caller releases it), safe
  // against its concurrent destruction: checked and locked under the registry lock, which
  // destruction takes. Null with the error of refuse() otherwise.
  LoaderMetaspace* lock_live(uintptr_t handle);

  // Calls f(loader) for every live loader, with the registry lock and that loader's lock held.
  template <typename F>
  void visit(F f) {
    std::lock_guard<Mutex> registry(lock_);
    for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
      std::lock_guard<LoaderLock> guard(l->lock());
      f(*l);
    }
  }
  // As visit(), but a loader whose lock is taken is skipped rather than waited for.
  template <typename F>
  void visit_idle(F f) {
    std::lock_guard<Mutex> registry(lock_);
    for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
      std::unique_lock<LoaderLock> guard(l->lock(), std::try_to_lock);
      if (guard.owns_lock()) f(*l);
    }
  }
  // Calls f(loader) for every live loader without any lock: only while no other thread can be
  // inside the library (the fork gate is closed, os/fork_gate.hpp).
  template <typename F>
  void visit_at_fork(F f) {
    for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) f(*l);
  }

  // The number of live loaders, in total and by kind, at one instant.
  void count(size_t* total, size_t by_kind[MS_LOADER_KIND_COUNT]);
  // Frees the parked objects that have a handle no dead handle names any more.
  void free_usable_parked();

  // Every live loader: alive, consistent (LoaderMetaspace::verify_locked), counted; `each`
  // runs on each under its lock after its check. False with the error recorded.
  template <typename F>
  bool verify_live(F each) {
    std::lock_guard<Mutex> registry(lock_);
    size_t n = 0;
    for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
      std::lock_guard<LoaderLock> guard(l->lock());
      MS_VERIFY(l->alive(), "dead loader %p in the live list", (void*)l);
      if (!l->verify_locked()) return false;
      each(*l);
      n++;
    }
    MS_VERIFY(n == live_count_, "%zu live loaders listed, counter says %zu", n, live_count_);
    return true;
  }
  // The dead handles are consistent, none is a live loader's, each live loader's death has room;
  // every object of the slab is a live, kept or parked loader's.
  bool verify_handles();

 private:
  // refuse() with lock_ held.
  ms_error_t refuse_locked(uintptr_t handle);
  // A new object whose handle, with some tag, is none of the dead handles; null with the error
  // recorded.
  LoaderMetaspace* new_object_locked();
  // Gives l the first tag, from kHandleTags[first] on (wrapping), whose handle is not a dead one.
  bool choose_tag_locked(LoaderMetaspace* l, size_t first);
  // Moves every kept object's handle to the dead handles (room reserved) and frees the object.
  void forget_kept_objects_locked();
  void free_object(LoaderMetaspace* l) { objects_.destroy(l); }

  // Loader objects have slabs of their own (the metaspace counts them as the non-class space's
  // overhead), so that a page that held loader objects holds nothing else later: lock_live() may
  // read a stale handle's object (a freed or reused one, or zeros) under the registry lock, and
  // every write to what it reads there is made under that lock too (creation, death).
  SlabAllocator& objects_;
  const LoaderEnvironment& env_;

  mutable Mutex lock_;
  LoaderMetaspace* live_ = nullptr;  // owned; doubly linked through prev_/next_
  size_t live_count_ = 0;
  size_t live_by_kind_[MS_LOADER_KIND_COUNT] = {};
  // The handles of the loaders that died last, in the bookkeeping slabs.
  std::unique_ptr<DeadHandles> dead_;
  // Dead loaders whose handles could not be remembered yet (no room: the bookkeeping refused),
  // oldest first: their objects stay, marked, until a later death finds room.
  LoaderObjectQueue kept_;
  // Loader objects all of whose handles are remembered as dead, oldest first (new_object_locked):
  // at most 1 024 / 14 + 1 at a time while they are used up; free_usable_parked() frees those
  // that are not any more.
  LoaderObjectQueue parked_;
  // The object and tag (its index) of the loader that died last: the slab hands that object out
  // next, and the tag after it is the first one to try.
  uintptr_t last_freed_object_ = 0;
  size_t last_freed_tag_ = 0;
};

}  // namespace metaspace
