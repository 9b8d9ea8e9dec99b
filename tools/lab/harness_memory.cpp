#include "harness_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <vector>

namespace lab {
namespace {

// Whole mappings from the kernel; the pool on top of it carves them into the player's objects.
class MappedResource final : public std::pmr::memory_resource {
 public:
  std::size_t resident_bytes() const {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t resident = 0;
    std::vector<unsigned char> vec;
    for (const auto& m : mappings_) {
      vec.resize(m.bytes / page);
      if (mincore(m.base, m.bytes, vec.data()) != 0) continue;
      for (unsigned char v : vec) resident += (v & 1) ? page : 0;
    }
    return resident;
  }

 private:
  struct Mapping {
    void* base;
    std::size_t bytes;
  };

  static std::size_t round_to_page(std::size_t bytes) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
  }

  void* do_allocate(std::size_t bytes, std::size_t) override {
    const std::size_t size = round_to_page(bytes);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    mappings_.push_back({p, size});  // the list itself is small: one entry per pool chunk
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t) override {
    munmap(p, round_to_page(bytes));
    for (auto& m : mappings_)
      if (m.base == p) {
        m = mappings_.back();
        mappings_.pop_back();
        break;
      }
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  std::vector<Mapping> mappings_;
};

MappedResource& mapped() {
  static MappedResource resource;
  return resource;
}

}  // namespace

std::pmr::memory_resource* harness_memory() {
  // Pool chunks grow geometrically up to 1 MiB, so the mapping list stays short.
  static std::pmr::unsynchronized_pool_resource pool({.max_blocks_per_chunk = 0, .largest_required_pool_block = 0},
                                                     &mapped());
  return &pool;
}

std::size_t harness_resident_bytes() { return mapped().resident_bytes(); }

}  // namespace lab
