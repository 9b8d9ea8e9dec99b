#include "backends/malloc_backend.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>

#include "backend_registry.hpp"

namespace lab {

// A loader's two block lists (class blocks sit at a different offset from their malloc'd base
// when aligned) with sentinel heads, and the live bytes its thread has requested.
struct MallocBackend::Loader {
  Header lists[2];
  std::atomic<std::size_t> live_bytes{0};

  Loader() {
    for (auto& h : lists) h.prev = h.next = &h;
  }
};

namespace {

std::size_t space_index(Space s) { return s == Space::klass ? 1 : 0; }

// What the rest of the process has in use when the backend is created: its blocks are not the
// backend's, while the free parts of the heap then are (the backend will be served from them; a
// second backend in one process, as one-loader creates one per alignment, finds the first's freed
// memory still held by glibc, and that is what malloc really costs).
std::size_t others_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

}  // namespace

MallocBackend::MallocBackend(std::string name, bool trim_after_unload, std::size_t class_alignment_bytes)
    : name_(std::move(name)), trim_(trim_after_unload), class_alignment_(class_alignment_bytes ? class_alignment_bytes : 8),
      committed_baseline_(others_in_use()) {}

MallocBackend::~MallocBackend() {
  for (Loader* l : std::unordered_set<Loader*>(loaders_)) destroy_loader(l);
}

nlohmann::json MallocBackend::settings() const {
  return {{"allocator", "glibc malloc"},
          {"header_bytes", sizeof(Header)},
          {"trim_after_unload", trim_},
          {"class_alignment_bytes", class_alignment_},
          {"committed", "mallinfo2 arena + hblkhd, minus what the process had in use when the backend was created"}};
}

// The header sits right before the block; an aligned class block needs its header inside the
// alignment padding, so the block starts one alignment unit into its malloc'd memory.
std::size_t MallocBackend::block_offset(Space space) const {
  return space == Space::klass && class_alignment_ > sizeof(Header) ? class_alignment_ : sizeof(Header);
}

LoaderHandle MallocBackend::create_loader(LoaderKind) {
  auto* l = new Loader;
  std::lock_guard lock(mutex_);
  loaders_.insert(l);
  return l;
}

void* MallocBackend::allocate(LoaderHandle loader, Space space, std::size_t bytes) {
  auto* l = static_cast<Loader*>(loader);
  const std::size_t offset = block_offset(space);
  void* base = nullptr;
  if (offset > sizeof(Header)) {
    if (posix_memalign(&base, class_alignment_, offset + bytes) != 0) base = nullptr;
  } else {
    base = std::malloc(offset + bytes);
  }
  if (!base) throw BackendError("malloc of " + std::to_string(offset + bytes) + " bytes failed");
  auto* h = reinterpret_cast<Header*>(static_cast<char*>(base) + offset - sizeof(Header));
  Header& head = l->lists[space_index(space)];
  h->prev = &head;
  h->next = head.next;
  head.next->prev = h;
  head.next = h;
  l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  return h + 1;
}

void MallocBackend::free_block(Header* h, Space space) {
  std::free(reinterpret_cast<char*>(h + 1) - block_offset(space));
}

void MallocBackend::deallocate(LoaderHandle loader, void* p, std::size_t bytes) {
  auto* l = static_cast<Loader*>(loader);
  Header* h = static_cast<Header*>(p) - 1;
  h->prev->next = h->next;
  h->next->prev = h->prev;
  // Premature frees are non-class blocks in this lab; class blocks die with their loader.
  free_block(h, Space::nonclass);
  l->live_bytes.store(l->live_bytes.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
}

void MallocBackend::destroy_loader(LoaderHandle loader) {
  auto* l = static_cast<Loader*>(loader);
  for (Space space : {Space::nonclass, Space::klass}) {
    Header& head = l->lists[space_index(space)];
    for (Header* h = head.next; h != &head;) {
      Header* next = h->next;
      free_block(h, space);
      h = next;
    }
  }
  {
    std::lock_guard lock(mutex_);
    loaders_.erase(l);
  }
  delete l;
}

void MallocBackend::purge() {
  if (trim_) malloc_trim(0);
}

MemoryFigures MallocBackend::figures() {
  MemoryFigures f;
  {
    std::lock_guard lock(mutex_);
    for (Loader* l : loaders_) f.used += l->live_bytes.load(std::memory_order_relaxed);
  }
  const struct mallinfo2 mi = mallinfo2();
  const std::size_t committed = mi.arena + mi.hblkhd;
  f.committed = committed - std::min(committed, committed_baseline_);
  f.extra = {{"malloc_baseline", committed_baseline_}, {"malloc_in_use", mi.uordblks}, {"malloc_free", mi.fordblks}, {"malloc_mmapped", mi.hblkhd},
             {"malloc_top_releasable", mi.keepcost}};
  return f;
}

void register_malloc_backends() {
  register_backend("malloc", [](const BackendOptions& o) {
    return std::make_unique<MallocBackend>("malloc", false, o.class_alignment_bytes);
  });
  register_backend("malloc-trim", [](const BackendOptions& o) {
    return std::make_unique<MallocBackend>("malloc-trim", true, o.class_alignment_bytes);
  });
}

}  // namespace lab
