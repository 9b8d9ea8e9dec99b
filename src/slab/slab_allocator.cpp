#include "slab/slab_allocator.hpp"

#include "common/assert.hpp"
#include "common/error.hpp"
#include "common/units.hpp"
#include "common/verify.hpp"
#include "os/fault_injection.hpp"

namespace metaspace {

SlabAllocator::SlabAllocator(const Options& options) : pages_(options) {}

size_t SlabAllocator::slab_capacity(size_t object_bytes) const {
  size_t room = pages_.page_bytes() - kSlabHeaderBytes;
  if (side_bytes_ == 0) return room / object_bytes;
  return (room - kSideStampBytes) / (object_bytes + side_bytes_);
}

int SlabAllocator::class_of(size_t bytes) {
  if (bytes <= 256) return static_cast<int>((bytes + 15) / 16) - 1;
  for (int c = 16; c < kClasses; c++) {
    if (bytes <= kClassBytes[c]) return c;
  }
  return -1;
}

void SlabAllocator::unlink(Slab* s) {
  if (s->prev != nullptr) s->prev->next = s->next; else partial_[s->size_class] = s->next;
  if (s->next != nullptr) s->next->prev = s->prev;
  s->prev = s->next = nullptr;
}

void SlabAllocator::link(Slab* s) {
  s->prev = nullptr;
  s->next = partial_[s->size_class];
  if (s->next != nullptr) s->next->prev = s;
  partial_[s->size_class] = s;
}

void* SlabAllocator::allocate(size_t bytes) {
  MS_ASSERT(bytes > 0, "bookkeeping allocation of 0 bytes");
  if (os::fault_now(os::FaultPoint::kBookkeeping)) {
    fail(MS_ERR_OUT_OF_MEMORY, "bookkeeping allocation of %zu bytes failed (injected)", bytes);
    return nullptr;
  }
  std::lock_guard<std::mutex> guard(lock_);
  if (!pages_.ok()) {
    fail(MS_ERR_OUT_OF_MEMORY, "no bookkeeping range");
    return nullptr;
  }
  size_t page = pages_.page_bytes();
  int c = class_of(bytes);
  Home home = home_of(c);
  MS_ASSERT(side_bytes_ == 0 || home == Home::kSlab,
            "%zu bytes from an allocator with side bytes: only slab objects keep them", bytes);
  void* result;
  if (home == Home::kSharedPage) {
    result = allocate_shared(c);
    if (result == nullptr) return nullptr;
    class_objects_[c]++;
  } else if (home == Home::kWholePages) {
    result = pages_.allocate_pages(align_up(bytes, page) / page);
    if (result == nullptr) return nullptr;
    large_pages_ += align_up(bytes, page) / page;
  } else {
    Slab* s = partial_[c];
    if (s == nullptr) {
      char* p = pages_.allocate_page();
      if (p == nullptr) return nullptr;
      s = reinterpret_cast<Slab*>(p);
      *s = Slab{nullptr, nullptr, nullptr, static_cast<uint32_t>(c), 0, 0,
                static_cast<uint32_t>(slab_capacity(kClassBytes[c])), page_owner_};
      link(s);
      slabs_++;
      class_slabs_[c]++;
    }
    if (s->free != nullptr) {
      result = s->free;
      // Atomic (relaxed) like every access to an object's first word: a stale loader handle
      // reads that word (the cookie) without this lock (instance/dead_handles.hpp).
      s->free = __atomic_load_n(static_cast<void**>(result), __ATOMIC_RELAXED);
    } else {
      result = reinterpret_cast<char*>(s) + kSlabHeaderBytes + size_t{s->carved} * kClassBytes[c];
      s->carved++;
    }
    s->used++;
    class_objects_[c]++;
    if (s->used == s->capacity) unlink(s);
  }
  live_allocations_++;
  allocated_bytes_ += bytes;
  update_committed();
  return result;
}

void SlabAllocator::free(void* p, size_t bytes) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> guard(lock_);
  MS_ASSERT(pages_.contains(p), "%p (%zu bytes) is not bookkeeping memory", p, bytes);
  size_t page = pages_.page_bytes();
  int c = class_of(bytes);
  live_allocations_--;
  allocated_bytes_ -= bytes;
  Home home = home_of(c);
  if (home == Home::kSharedPage) {
    class_objects_[c]--;
    free_shared(p, c);
  } else if (home == Home::kWholePages) {
    pages_.free_pages(static_cast<char*>(p), align_up(bytes, page) / page);
    large_pages_ -= align_up(bytes, page) / page;
  } else {
    Slab* s = slab_of(p);
    MS_ASSERT(s->size_class == static_cast<uint32_t>(c) && s->used > 0,
              "%p freed as %zu bytes into a slab of class %u", p, bytes, s->size_class);
    bool was_full = s->used == s->capacity;
    __atomic_store_n(static_cast<void**>(p), s->free, __ATOMIC_RELAXED);  // see allocate()
    s->free = p;
    s->used--;
    class_objects_[c]--;
    if (s->used == 0) {
      // An empty slab goes back: the store keeps it committed until purge (or uncommits it now
      // under the aggressive policy), so a churn of one object does not fault a page each time.
      if (!was_full) unlink(s);
      slabs_--;
      class_slabs_[c]--;
      pages_.free_pages(reinterpret_cast<char*>(s), 1);
    } else if (was_full) {
      link(s);
    }
  }
  update_committed();
}

void SlabAllocator::push_shared_free(SharedFree* f, int c) {
  __atomic_store_n(&f->next, shared_free_[c], __ATOMIC_RELAXED);  // the first word: see allocate()
  f->prev = nullptr;
  f->check = kSharedFreeCheck + static_cast<uintptr_t>(c);
  if (shared_free_[c] != nullptr) shared_free_[c]->prev = f;
  shared_free_[c] = f;
}

void SlabAllocator::unlink_shared_free(SharedFree* f, int c) {
  SharedFree* next = __atomic_load_n(&f->next, __ATOMIC_RELAXED);
  if (f->prev != nullptr) {
    __atomic_store_n(&f->prev->next, next, __ATOMIC_RELAXED);
  } else {
    shared_free_[c] = next;
  }
  if (next != nullptr) next->prev = f->prev;
}

void* SlabAllocator::allocate_shared(int c) {
  size_t size = kClassBytes[c];
  if (SharedFree* f = shared_free_[c]) {
    unlink_shared_free(f, c);
    slab_of(f)->used++;
    return f;
  }
  size_t page = pages_.page_bytes();
  if (bump_page_ == nullptr || page - bump_page_->carved < size) {
    // The old bump page keeps what it could not fit (less than 2 016 bytes) until it empties.
    // (Carving that rest into free objects of smaller classes changed no lab trace's figures.)
    char* p = pages_.allocate_page();
    if (p == nullptr) return nullptr;
    bump_page_ = reinterpret_cast<Slab*>(p);
    *bump_page_ = Slab{nullptr, nullptr, nullptr, kSharedPage, 0,
                       static_cast<uint32_t>(kSlabHeaderBytes), 0, page_owner_};
    shared_pages_++;
  }
  void* result = reinterpret_cast<char*>(bump_page_) + bump_page_->carved;
  bump_page_->carved += static_cast<uint32_t>(size);
  bump_page_->used++;
  return result;
}

void SlabAllocator::free_shared(void* p, int c) {
  Slab* s = slab_of(p);
  MS_ASSERT(s->size_class == kSharedPage && s->used > 0,
            "%p freed as a %u-byte object into a page of class %u", p, kClassBytes[c],
            s->size_class);
  push_shared_free(static_cast<SharedFree*>(p), c);
  if (--s->used > 0) return;
  // Every object carved from the page is free now: off their lists, and the page goes back.
  char* base = reinterpret_cast<char*>(s);
  for (size_t at = kSlabHeaderBytes; at < s->carved;) {
    auto* f = reinterpret_cast<SharedFree*>(base + at);
    int fc = static_cast<int>(f->check - kSharedFreeCheck);
    MS_ASSERT(fc >= kFirstSharedClass && fc < kClasses, "shared page %p: object at %zu is %#lx",
              (void*)s, at, (unsigned long)f->check);
    unlink_shared_free(f, fc);
    at += kClassBytes[fc];
  }
  if (bump_page_ == s) bump_page_ = nullptr;
  shared_pages_--;
  pages_.free_pages(base, 1);
}

size_t SlabAllocator::class_bytes(size_t bytes) {
  int c = class_of(bytes);
  return c < 0 ? 0 : kClassBytes[c];
}

size_t SlabAllocator::Usage::slab_objects() const {
  size_t objects = 0;
  for (int i = 0; i < class_count; i++) objects += classes[i].objects;
  return objects;
}

size_t SlabAllocator::Usage::pages() const {
  size_t pages = large_pages + empty_pages + shared_pages;
  for (int i = 0; i < class_count; i++) pages += classes[i].pages;
  return pages;
}

SlabAllocator::Usage SlabAllocator::usage() const {
  std::lock_guard<std::mutex> guard(lock_);
  Usage u{};
  u.page_bytes = pages_.page_bytes();
  size_t slab_pages = 0;
  for (int c = 0; c < kClasses; c++) {
    if (class_slabs_[c] != 0) {
      u.classes[u.class_count++] = {kClassBytes[c], class_objects_[c], class_slabs_[c]};
      slab_pages += class_slabs_[c];
    } else if (class_objects_[c] != 0) {
      u.shared_classes[u.shared_class_count++] = {kClassBytes[c], class_objects_[c], 0};
    }
  }
  u.shared_pages = shared_pages_;
  u.large_pages = large_pages_;
  u.empty_pages =
      pages_.committed_bytes() / u.page_bytes - slab_pages - large_pages_ - shared_pages_;
  return u;
}

size_t SlabAllocator::purge() {
  std::lock_guard<std::mutex> guard(lock_);
  size_t returned = pages_.purge();
  update_committed();
  return returned;
}

size_t SlabAllocator::allocated_bytes() const {
  std::lock_guard<std::mutex> guard(lock_);
  return allocated_bytes_;
}

size_t SlabAllocator::live_allocations() const {
  std::lock_guard<std::mutex> guard(lock_);
  return live_allocations_;
}

bool SlabAllocator::verify() const {
  std::lock_guard<std::mutex> guard(lock_);
  if (!pages_.verify()) return false;
  for (int c = 0; c < kClasses; c++) {
    for (const Slab* s = partial_[c]; s != nullptr; s = s->next) {
      MS_VERIFY(s->size_class == static_cast<uint32_t>(c), "slab %p of class %u on list %d",
                (const void*)s, s->size_class, c);
      MS_VERIFY(s->used > 0 && s->used < s->capacity && s->carved <= s->capacity,
                "partial slab %p: %u used, %u carved of %u", (const void*)s, s->used, s->carved,
                s->capacity);
      MS_VERIFY(s->next == nullptr || s->next->prev == s, "slab list broken at %p",
                (const void*)s);
    }
  }
  MS_VERIFY(committed_bytes() == pages_.committed_bytes(), "overhead %zu, pages say %zu",
            committed_bytes(), pages_.committed_bytes());
  size_t class_slabs = 0;
  size_t class_objects = 0;
  for (int c = 0; c < kClasses; c++) {
    class_slabs += class_slabs_[c];
    class_objects += class_objects_[c];
  }
  MS_VERIFY(class_slabs == slabs_, "%zu slabs by class, %zu in all", class_slabs, slabs_);
  for (int c = kFirstSharedClass; c < kClasses; c++) {
    const SharedFree* prev = nullptr;
    for (const SharedFree* f = shared_free_[c]; f != nullptr;
         prev = f, f = __atomic_load_n(&f->next, __ATOMIC_RELAXED)) {
      const Slab* s = slab_of(f);
      MS_VERIFY(pages_.contains(f) && s->size_class == kSharedPage &&
                    f->check == kSharedFreeCheck + static_cast<uintptr_t>(c) && f->prev == prev,
                "free %u-byte object %p: not on a shared page, or its links are broken",
                kClassBytes[c], (const void*)f);
      MS_VERIFY(s->used > 0, "free object %p on an empty shared page", (const void*)f);
    }
  }
  MS_VERIFY(bump_page_ == nullptr || bump_page_->size_class == kSharedPage,
            "the bump page %p is not a shared page", (const void*)bump_page_);
  MS_VERIFY(class_objects <= live_allocations_ &&
                (class_slabs + large_pages_ + shared_pages_) * pages_.page_bytes() <=
                    pages_.committed_bytes(),
            "%zu slab objects of %zu live, %zu slab and %zu large pages in %zu committed bytes",
            class_objects, live_allocations_, class_slabs, large_pages_,
            pages_.committed_bytes());
  return true;
}

}  // namespace metaspace
