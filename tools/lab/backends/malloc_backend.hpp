#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>

#include "backend.hpp"

namespace lab {

// The "malloc-only metaspace" design: every block is a malloc'd block with a two-word header that
// links it into its loader's list; a dying loader walks its lists and frees block by block.
// used = bytes requested and not freed (what the lab asked for); committed = what glibc holds
// from the OS: mallinfo2() arena (sbrk'd and arena heaps, free parts included) + hblkhd (blocks
// mmapped directly), minus what the process had in use (uordblks + hblkhd) when the backend was
// created: mallinfo2 describes the whole process, and the lab's own blocks are not the backend's;
// free heap parts are (the backend is served from them).
class MallocBackend : public Backend {
 public:
  MallocBackend(std::string name, bool trim_after_unload, std::size_t class_alignment_bytes);
  ~MallocBackend() override;

  std::string name() const override { return name_; }
  nlohmann::json settings() const override;
  LoaderHandle create_loader(LoaderKind kind) override;
  void* allocate(LoaderHandle loader, Space space, std::size_t bytes) override;
  void deallocate(LoaderHandle loader, void* p, std::size_t bytes) override;
  void destroy_loader(LoaderHandle loader) override;
  void purge() override;
  MemoryFigures figures() override;

  struct Header {
    Header* prev;
    Header* next;
  };
  struct Loader;

 private:
  std::size_t block_offset(Space space) const;
  void free_block(Header* h, Space space);

  std::string name_;
  bool trim_;
  std::size_t class_alignment_;
  std::size_t committed_baseline_;  // mallinfo2 uordblks + hblkhd at construction
  std::mutex mutex_;  // guards loaders_ (loader creation may come from several threads)
  std::unordered_set<Loader*> loaders_;
};

// malloc (no trimming: what a runtime gets) and malloc-trim (malloc_trim(0) after unloading).
void register_malloc_backends();

}  // namespace lab
