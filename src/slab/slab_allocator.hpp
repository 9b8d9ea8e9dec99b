// Layer 1½: the allocator of the library's own structures (chunk headers, commit masks, loader
// objects, free-block structures), carved from pages of a PageStore.
//
// Small objects (up to 256 bytes: chunk headers, loader objects) come from slabs: one page holds
// objects of one size class behind a 48-byte header, with a free list through the freed objects.
// A slab whose last object is freed gives its page back to the store at once (which uncommits it
// in purge(), or at once under the aggressive policy).
//
// Larger structures (304 to 2 016 bytes: arenas, free-block structures, medium bins, a shared
// loader's windows, dead handles' storage) are few per metaspace and of many sizes, so they share
// pages ("shared pages"): a page is carved by a bump pointer in objects of any of these classes,
// and a freed one waits on its class's list (linked through the object itself, across pages)
// for the next request of that class. With a slab per class, one object of each held a page of
// its own: at the lab's ml-10-20-60 worst sample four pages held eight arenas (304 bytes), the
// boot loader's free-block structure (672) and its medium bins (2 016). A shared page goes back
// when its last object is freed (its free objects leave their lists: a walk of at most 13).
// Objects larger than half a page take whole pages.
//
// Every allocation goes through allocate(), which first asks the kBookkeeping fault point, so
// tests can make any bookkeeping allocation fail; callers turn null into MS_ERR_OUT_OF_MEMORY
// (already recorded) and leave their state unchanged.
//
// Thread-safe (one lock, a leaf: nothing is called with it held but the os layer).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

#include "common/assert.hpp"
#include "os/os_memory.hpp"
#include "slab/page_store.hpp"

namespace metaspace {

class SlabAllocator {
 public:
  using Options = PageStore::Options;

  explicit SlabAllocator(const Options& options);
  ~SlabAllocator() = default;  // the page store unmaps everything
  SlabAllocator(const SlabAllocator&) = delete;
  SlabAllocator& operator=(const SlabAllocator&) = delete;

  // False if the range could not be reserved (the error is set).
  bool ok() const { return pages_.ok(); }
  // Every object lies above it and below it + the reserved range: the chunk start table names
  // chunk headers by their offset from it.
  const char* range_base() const { return pages_.range_base(); }

  // Inside the reserved range (lock-free): where this allocator's objects are, were or may be.
  bool in_range(const void* p) const { return pages_.in_range(p); }

  // A word every slab and shared page of this allocator carries in its header (set before the
  // first allocation), so that an object of up to 2 016 bytes finds what it belongs to without a
  // field of its own: page_owner_of(object). The loader objects' allocator keeps its metaspace's
  // loader environment there (8 of a loader object's bytes, loader/loader_metaspace.hpp).
  void set_page_owner(const void* owner) {
    MS_ASSERT(slabs_ == 0 && shared_pages_ == 0, "page owner set after pages were made");
    page_owner_ = owner;
  }
  // Side bytes: `bytes_per_object` bytes per object of every slab (classes up to 256 bytes), and
  // one 8-byte stamp word, at the end of each slab page, which the allocator never writes: they
  // keep what a page held before it went back to the store, unless the kernel took the page (then
  // they read zeros), so a client can remember something about an object's place across the
  // object's death and the page's (the dead handles' tags: instance/dead_handles.hpp; they cost no
  // room there: 31 loader objects of 128 bytes leave 80 of a 4 KiB page's bytes, side bytes of 2
  // take 70). Set before the first allocation, as the page owner; only for an allocator of slab
  // objects (a shared page or an object of whole pages would be carved over them).
  void set_side_bytes(uint32_t bytes_per_object) {
    MS_ASSERT(slabs_ == 0 && shared_pages_ == 0, "side bytes set after pages were made");
    side_bytes_ = bytes_per_object;
  }
  // The object's own side bytes (`bytes_per_object` as set), and its page's stamp word; both only
  // for slab objects of an allocator with side bytes. Lock-free: the addresses follow from the
  // object's address and its page's class, which do not change while the page holds an object.
  static unsigned char* side_of(const void* object, uint32_t bytes_per_object) {
    const Slab* s = slab_of(object);
    // The object's index: its offset times the class's reciprocal (exact below 64 KiB pages:
    // the rounding error stays under 1 / size), not a division.
    size_t index = (reinterpret_cast<uintptr_t>(object) - reinterpret_cast<uintptr_t>(s) -
                    kSlabHeaderBytes) * kClassReciprocal[s->size_class] >> 32;
    return page_end(object) - kSideStampBytes - (index + 1) * bytes_per_object;
  }
  static uint64_t* side_stamp(const void* object) {
    return reinterpret_cast<uint64_t*>(page_end(object) - kSideStampBytes);
  }
  // The page holding p is committed: in use, or empty and not yet given back. Its side bytes may
  // be written then (a page given back would be faulted in again, uncounted).
  bool page_committed(const void* p) const {
    std::lock_guard<std::mutex> guard(lock_);
    return pages_.committed(p);
  }
  // The side bytes of the whole slab page holding `object` (capacity × bytes_per_object, in
  // front of the stamp).
  static unsigned char* side_area(const void* object, uint32_t bytes_per_object, size_t* bytes) {
    *bytes = size_t{slab_of(object)->capacity} * bytes_per_object;
    return page_end(object) - kSideStampBytes - *bytes;
  }
  // Objects of `object_bytes` (a slab class's size) a slab page holds, side bytes included.
  size_t slab_capacity(size_t object_bytes) const;

  // The page owner of the allocator that handed out `object` (a slab or shared-page object, not
  // one of whole pages), read from its page's header: lock-free, the word never changes while the
  // page holds an object.
  static const void* page_owner_of(const void* object) { return slab_of(object)->owner; }
  // [p, p + bytes) can be read whatever it holds now (an object, a freed one, a page given back,
  // which reads zeros): it lies where the range was opened, which stays open.
  bool readable(const void* p, size_t bytes) const {
    std::lock_guard<std::mutex> guard(lock_);
    return pages_.readable(p, bytes);
  }

  // `bytes` > 0; 16-byte aligned memory, or null with MS_ERR_OUT_OF_MEMORY (or the kernel's
  // refusal) recorded.
  void* allocate(size_t bytes);
  // `bytes` as passed to allocate().
  void free(void* p, size_t bytes);

  template <typename T, typename... Args>
  T* create(Args&&... args) {
    void* m = allocate(sizeof(T));
    return m == nullptr ? nullptr : new (m) T(std::forward<Args>(args)...);
  }
  template <typename T>
  void destroy(T* p) {
    if (p == nullptr) return;
    p->~T();
    free(p, sizeof(T));
  }
  // For objects with an alignment above 16 (alignas(128): lines no other object shares, which
  // threads write without the false sharing of slab neighbours). alignof(T) more is allocated;
  // the word in front of the object remembers where the allocation starts.
  template <typename T, typename... Args>
  T* create_aligned(Args&&... args) {
    static_assert(alignof(T) > 16 && sizeof(T) % alignof(T) == 0);
    char* m = static_cast<char*>(allocate(sizeof(T) + alignof(T)));
    if (m == nullptr) return nullptr;
    char* at = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(m) + sizeof(void*) + alignof(T) - 1) & ~(alignof(T) - 1));
    reinterpret_cast<char**>(at)[-1] = m;
    return new (at) T(std::forward<Args>(args)...);
  }
  template <typename T>
  void destroy_aligned(T* p) {
    if (p == nullptr) return;
    char* m = reinterpret_cast<char**>(p)[-1];
    p->~T();
    free(m, sizeof(T) + alignof(T));
  }

  // Bytes of committed memory the bookkeeping holds (slabs, large objects, empty pages not yet
  // returned): the `overhead` of the statistics. Lock-free read.
  size_t committed_bytes() const { return committed_bytes_.load(std::memory_order_relaxed); }
  // Bytes requested by live allocations (what a perfect allocator would hold).
  size_t allocated_bytes() const;
  size_t live_allocations() const;
  // Returns empty pages to the OS; the bytes given back.
  size_t purge();

  bool verify() const;

  static constexpr size_t kLargestSlabObject = 2016;
  static constexpr int kClasses = 27;
  // Classes from this one on (304 bytes and up) live on shared pages.
  static constexpr int kFirstSharedClass = 16;

  // Where the committed pages are, for the statistics' breakdown of overhead: per size class in
  // use its objects and slab pages, the pages of objects above the largest class, and empty
  // pages kept for the next purge. The pages add up to committed_bytes() at one instant.
  struct ClassUsage {
    uint32_t object_bytes;  // the class's object size (requests up to it use the class)
    size_t objects;
    size_t pages;
  };
  struct Usage {
    ClassUsage classes[kClasses];  // the first `class_count` are the classes with a slab
    int class_count;
    // The classes with objects on shared pages (their `pages` is 0), and those pages.
    ClassUsage shared_classes[kClasses];
    int shared_class_count;
    size_t shared_pages;
    size_t large_pages;
    size_t empty_pages;
    size_t page_bytes;
    // Objects in the slabs (large objects not counted), and every page: slabs, large, empty.
    size_t slab_objects() const;
    size_t pages() const;
    size_t committed_bytes() const { return pages() * page_bytes; }
  };
  Usage usage() const;
  // The object size of the class that serves `bytes`; 0 for objects that take whole pages.
  static size_t class_bytes(size_t bytes);

 private:
  struct Slab {
    Slab* prev;
    Slab* next;
    void* free;          // freed objects, linked through their first word
    uint32_t size_class;
    uint32_t used;       // objects handed out
    uint32_t carved;     // objects ever carved from the bump area
    uint32_t capacity;
    const void* owner;   // set_page_owner's word
  };
  static constexpr size_t kSlabHeaderBytes = 48;
  static constexpr size_t kSideStampBytes = 8;
  static unsigned char* page_end(const void* p) {
    return reinterpret_cast<unsigned char*>(slab_of(p)) + os::page_size();
  }
  static_assert(sizeof(Slab) <= kSlabHeaderBytes);
  // Steps of 16 bytes up to 256, then classes that divide a 4 KiB slab's 4 048 usable bytes with
  // little left over. 48 holds a chunk header (84 to a page; 63 at 64 bytes, 50 at 80), 128 a
  // loader object (31; 28 at 144), 304 a loader's arenas or a class arena (13 to a page; 12 at
  // 320), 672 a free-block structure (6 to a page; 5 at 768), 1 552-byte medium bins go to 2 016.
  static constexpr uint32_t kClassBytes[kClasses] = {
      16,  32,  48,  64,  80,  96,  112, 128, 144, 160, 176,  192,  208,  224,
      240, 256, 304, 320, 384, 448, 512, 544, 672, 768, 1008, 1344, 2016};
  // ceil(2^32 / kClassBytes[c]): an offset in a page times it, shifted by 32, is the offset
  // divided by the class's size.
  static constexpr std::array<uint64_t, kClasses> kClassReciprocal = [] {
    std::array<uint64_t, kClasses> r{};
    for (int c = 0; c < kClasses; c++) {
      r[c] = ((uint64_t{1} << 32) + kClassBytes[c] - 1) / kClassBytes[c];
    }
    return r;
  }();

  static int class_of(size_t bytes);
  // Where an object of class c (class_of; -1 above the largest class) lives: a slab of its class,
  // a shared page, or whole pages (classes above half a page's room).
  enum class Home : uint8_t { kSlab, kSharedPage, kWholePages };
  Home home_of(int c) const {
    if (c < 0 || kClassBytes[c] > (pages_.page_bytes() - kSlabHeaderBytes) / 2) {
      return Home::kWholePages;
    }
    return c >= kFirstSharedClass ? Home::kSharedPage : Home::kSlab;
  }
  // A page's header says "shared page" with this class.
  static constexpr uint32_t kSharedPage = kClasses;
  // A free object on a shared page: its class's list links, and a check word.
  struct SharedFree {
    SharedFree* next;  // first word: accessed atomically, as every object's first word
    SharedFree* prev;
    uintptr_t check;   // kSharedFreeCheck + class
  };
  static constexpr uintptr_t kSharedFreeCheck = 0x5ea4ed0000;
  void* allocate_shared(int c);
  void free_shared(void* p, int c);
  void push_shared_free(SharedFree* f, int c);
  void unlink_shared_free(SharedFree* f, int c);
  // The header of the page holding p (the store's pages are the os's: PageStore).
  static Slab* slab_of(const void* p) {
    return reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(p) & ~(os::page_size() - 1));
  }
  void unlink(Slab* s);
  void link(Slab* s);
  void update_committed() { committed_bytes_.store(pages_.committed_bytes(), std::memory_order_relaxed); }

  mutable std::mutex lock_;
  PageStore pages_;
  const void* page_owner_ = nullptr;
  uint32_t side_bytes_ = 0;  // per slab object, at its page's end (set_side_bytes)
  Slab* partial_[kClasses] = {};  // slabs with a free object, per class
  size_t slabs_ = 0;
  size_t class_slabs_[kClasses] = {};    // slabs per class
  size_t class_objects_[kClasses] = {};  // objects handed out per class
  size_t large_pages_ = 0;               // pages of objects above the largest class
  SharedFree* shared_free_[kClasses] = {};  // per class from kFirstSharedClass: freed objects
  Slab* bump_page_ = nullptr;               // the shared page new objects are carved from
  size_t shared_pages_ = 0;
  size_t live_allocations_ = 0;
  size_t allocated_bytes_ = 0;
  std::atomic<size_t> committed_bytes_{0};
};

}  // namespace metaspace
