#include "instance/loader_registry.hpp"

#include <sys/random.h>

#include <ctime>

#include "common/error.hpp"
#include "common/verify.hpp"

// Non-zero from the start: before the first ms_create no loader exists, and a word equal to its
// own address (a self-pointing list head) must not pass the fast path's check even then.
extern "C" {
uintptr_t ms__handle_secret = 0x9E3779B97F4A7C17u;
}

namespace metaspace {

void choose_handle_secret() {
  static std::once_flag once;
  std::call_once(once, [] {
    uintptr_t random = 0;
    if (getrandom(&random, sizeof random, GRND_NONBLOCK) != sizeof random) {
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      random = static_cast<uintptr_t>(now.tv_nsec) * 0x9E3779B97F4A7C15u ^
               reinterpret_cast<uintptr_t>(&now);
    }
    // Low bits set: never 0, and never an aligned offset (a handle is 8-byte aligned, so no
    // pointer into the same object equals handle ^ secret).
    ms__handle_secret = random | 7u;
  });
}

namespace {

// The tags a handle may carry: 4 bits (loader objects are 16-byte aligned), but never 7 in the
// low 3 bits. A live loader's cookie is handle ^ secret, and the secret's low 3 bits are set
// (choose_handle_secret), so a cookie is never an 8-byte aligned word: no pointer (a free list
// link of the slab, a self-pointing word) can look like one.
constexpr uint8_t kHandleTags[] = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14};
constexpr size_t kTagCount = sizeof(kHandleTags);
static_assert(kTagCount == 14 && MS__HANDLE_TAG_MASK == 15);
size_t tag_index(uint8_t tag) { return tag < 7 ? tag : tag - 1u; }

}  // namespace

LoaderRegistry::LoaderRegistry(SlabAllocator& objects, const LoaderEnvironment& env,
                               SlabAllocator& bookkeeping)
    : objects_(objects), env_(env), dead_(std::make_unique<DeadHandles>(bookkeeping, objects)) {}

LoaderRegistry::~LoaderRegistry() {
  // Arenas first (they return chunks); the metaspace unmaps the spaces after.
  while (live_ != nullptr) {
    LoaderMetaspace* l = live_;
    live_ = l->next_;
    l->close();
    free_object(l);
  }
  while (!kept_.empty()) free_object(kept_.pop_front());
  while (!parked_.empty()) free_object(parked_.pop_front());
  dead_.reset();
}

bool LoaderRegistry::choose_tag_locked(LoaderMetaspace* l, size_t first) {
  MS_ASSERT_LOCKED(lock_);
  for (size_t i = 0; i < kTagCount; i++) {
    l->set_tag(kHandleTags[(first + i) % kTagCount]);
    if (!dead_->contains_allocated(l->handle())) return true;
  }
  return false;
}

LoaderMetaspace* LoaderRegistry::new_object_locked() {
  MS_ASSERT_LOCKED(lock_);
  // The slab hands the object of the loader that died last out first (its page is hot), so a
  // runtime that creates and destroys loaders in a loop gets one object back each time, with
  // the tag after its last one. Once its 14 handles are all remembered as dead the object is
  // parked (it would come back first every time, and each create would try all its tags and all
  // the parked ones'), and the oldest parked object is tried instead, or another one from the
  // slab.
  LoaderMetaspace* l = objects_.create<LoaderMetaspace>(env_);
  if (l == nullptr) return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
  size_t first = reinterpret_cast<uintptr_t>(l) == last_freed_object_ ? last_freed_tag_ + 1 : 0;
  while (!choose_tag_locked(l, first)) {
    parked_.push_back(l);
    if (parked_.first() != l && choose_tag_locked(parked_.first(), 0)) return parked_.pop_front();
    l = objects_.create<LoaderMetaspace>(env_);
    if (l == nullptr) return nullptr;
    first = 0;
  }
  return l;
}

void LoaderRegistry::free_usable_parked() {
  std::lock_guard<Mutex> guard(lock_);
  for (LoaderMetaspace* l = parked_.first(); l != nullptr;) {
    LoaderMetaspace* next = l->next_;
    if (choose_tag_locked(l, 0)) {
      parked_.unlink(l);
      free_object(l);
    }
    l = next;
  }
}

LoaderMetaspace* LoaderRegistry::create(ms_loader_kind_t kind, unsigned flags) {
  if (kind != MS_LOADER_BOOT && kind != MS_LOADER_STANDARD && kind != MS_LOADER_MICRO) {
    fail(MS_ERR_INVALID_ARGUMENT, "loader kind %d is unknown", kind);
    return nullptr;
  }
  if ((flags & ~MS_LOADER_SHARED) != 0) {
    fail(MS_ERR_INVALID_ARGUMENT, "unknown loader flags %#x", flags & ~MS_LOADER_SHARED);
    return nullptr;
  }
  LoaderMetaspace* l;
  {
    std::lock_guard<Mutex> guard(lock_);
    l = new_object_locked();
    if (l == nullptr) return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
    bool opened = false;
    try {
      opened = l->open(kind, flags);
    } catch (...) {  // std::bad_alloc of a heap structure (checked mode): the API barrier reports it
      free_object(l);
      throw;
    }
    if (!opened) {
      free_object(l);
      return nullptr;  // MS_ERR_OUT_OF_MEMORY recorded
    }
    l->prev_ = nullptr;
    l->next_ = live_;
    if (live_ != nullptr) live_->prev_ = l;
    live_ = l;
    live_count_++;
    live_by_kind_[kind]++;
  }
  // Opens the inline fast path. Atomic: stale handles to this object are read without a lock.
  __atomic_store_n(&l->cookie, handle_cookie(l->handle()), __ATOMIC_RELAXED);
  return l;
}

ms_error_t LoaderRegistry::destroy(LoaderMetaspace* l) {
  __atomic_store_n(&l->cookie, uintptr_t{0}, __ATOMIC_RELAXED);  // the fast path refuses it
  std::lock_guard<Mutex> guard(lock_);
  if (!l->alive()) return fail(MS_ERR_DESTROYED, "loader %p was already destroyed", (void*)l);
  if (l->prev_ != nullptr) l->prev_->next_ = l->next_; else live_ = l->next_;
  if (l->next_ != nullptr) l->next_->prev_ = l->prev_;
  l->prev_ = l->next_ = nullptr;
  live_count_--;
  live_by_kind_[l->kind()]--;
  ms_error_t result = l->close();
  last_freed_object_ = reinterpret_cast<uintptr_t>(l);
  last_freed_tag_ = tag_index(static_cast<uint8_t>(l->handle() & MS__HANDLE_TAG_MASK));
  // Nothing refers to the object any more (its arenas, windows and pooled runs went with
  // close()): it is free for the next loader, under another handle, once its handle is
  // remembered. Without room for that (the bookkeeping refused), the object is kept, dead, and
  // says so itself (refuse), until a later death finds room for both.
  if (dead_->reserve(dead_->size() + kept_.size() + 1)) {
    forget_kept_objects_locked();
    dead_->add(l->handle());
    free_object(l);
  } else {
    clear_error();  // the loader is destroyed all the same
    l->mark_kept_dead();
    kept_.push_back(l);
  }
  return result;
}

void LoaderRegistry::forget_kept_objects_locked() {
  MS_ASSERT_LOCKED(lock_);
  // They died first: their handles go in first, in the order of death.
  while (!kept_.empty()) {
    LoaderMetaspace* l = kept_.pop_front();
    dead_->add(l->handle());
    free_object(l);
  }
}

ms_error_t LoaderRegistry::refuse(uintptr_t handle) {
  std::lock_guard<Mutex> guard(lock_);
  return refuse_locked(handle);
}

ms_error_t LoaderRegistry::refuse_locked(uintptr_t handle) {
  MS_ASSERT_LOCKED(lock_);
  LoaderMetaspace* l = LoaderMetaspace::object_of(handle);
  bool kept = !kept_.empty() && objects_.readable(l, sizeof(LoaderMetaspace)) &&
              l->valid_handle() && l->kept_dead() && l->handle() == handle;
  if (kept || dead_->contains(handle)) {
    return fail(MS_ERR_DESTROYED, "loader %p was destroyed", reinterpret_cast<void*>(handle));
  }
  return fail(MS_ERR_INVALID_ARGUMENT, "%p is not a loader handle",
              reinterpret_cast<void*>(handle));
}

LoaderMetaspace* LoaderRegistry::lock_live(uintptr_t handle) {
  std::unique_lock<Mutex> registry(lock_);
  LoaderMetaspace* l = LoaderMetaspace::object_of(handle);
  // Under the registry lock no loader dies, so what the object says now holds until its own
  // lock is taken: it is this handle's loader only if it is alive and carries the handle.
  if (!objects_.readable(l, sizeof(LoaderMetaspace)) || !l->valid_handle() || !l->alive() ||
      l->handle() != handle) {
    refuse_locked(handle);  // at the same instant: no loader died in between
    return nullptr;
  }
  l->lock().lock();
  return l;
}

void LoaderRegistry::count(size_t* total, size_t by_kind[MS_LOADER_KIND_COUNT]) {
  std::lock_guard<Mutex> guard(lock_);
  *total = live_count_;
  for (int k = 0; k < MS_LOADER_KIND_COUNT; k++) by_kind[k] = live_by_kind_[k];
}

bool LoaderRegistry::verify_handles() {
  std::lock_guard<Mutex> guard(lock_);
  if (!dead_->verify()) return false;
  size_t live = 0;
  for (LoaderMetaspace* l = live_; l != nullptr; l = l->next_) {
    // O(1) a loader: its place's marks are exact (DeadHandles::verify checks them).
    MS_VERIFY(DeadHandles::page_stamped(l) && !dead_->marked(l->handle()),
              "live loader %p has a dead handle, or its page no dead handles' marks",
              reinterpret_cast<void*>(l->handle()));
    live++;
  }
  if (!kept_.verify("kept dead", [&](const LoaderMetaspace* l) {
        MS_VERIFY(!l->alive() && l->kept_dead() && !dead_->contains(l->handle()),
                  "kept dead loader object %p: alive %d, kept %d", (const void*)l, l->alive(),
                  l->kept_dead());
        return true;
      }) ||
      !parked_.verify("parked", [](const LoaderMetaspace* l) {
        MS_VERIFY(!l->alive(), "parked loader object %p is alive", (const void*)l);
        return true;
      })) {
    return false;
  }
  size_t kept = kept_.size(), parked = parked_.size();
  MS_VERIFY(objects_.live_allocations() == live + kept + parked,
            "%zu loader objects for %zu live loaders, %zu kept dead ones, %zu parked",
            objects_.live_allocations(), live, kept, parked);
  return true;
}

}  // namespace metaspace
