// The micro pool: where micro loaders (one hidden class, lambda or reflection stub each, ~2 KiB)
// get their blocks without owning chunks, and standard loaders their first Klasses (up to the
// same limits; loader_metaspace.hpp says why only those). "Loader" below means either.
//
// A micro loader with private chunks paid for a 1 KiB class chunk holding one ~528-byte Klass and
// 2 KiB of non-class chunks for ~1.6 KiB, plus their chunk headers: 4 624 bytes of RSS per loader
// for 2 136 live (glibc malloc: 2 391). Here, per space, one shared chunk of a commit granule (4 KiB
// by default) is current; blocks of all micro loaders are bumped off it back to back, under the
// pool's lock. Each shared chunk counts the bytes live loaders hold in it (Chunk::used_bytes, which
// for a shared chunk means exactly that), and goes back to the chunk manager when the count reaches
// zero and it is no longer current: a shared chunk is one granule, so its death is its granule's
// return (uncommitted per the reclaim policy).
//
// A loader remembers its bytes as runs — contiguous bytes it holds in one shared chunk — in a tiny
// record inside the loader object (MicroRecord). A loader that allocates its blocks one after
// another (the usual case) has one run per space, two when a chunk filled up. A run grows while the
// loader's next block lands right behind it; a block that does not (another loader bumped in
// between, a new chunk) opens a new run. When the record is full, or the block or the loader is
// not micro any more (kMaxBlockFraction, kMaxLoaderBytes), allocate() answers kGraduate and the
// loader continues with private arenas. So death is O(runs) and ownership checks are exact: a
// block is the loader's if it lies inside one of its runs.
//
// Class space: blocks start at the class alignment (narrow pointers are unchanged); the padding in
// front of a block belongs to no run (free in chunks, like the unbumped tail of a chunk).
//
// Tails: when a block does not fit the current chunk, a new one becomes current and the old one's
// rest stays open as the space's tail window, for later blocks small enough for it; non-class
// blocks may also take the class tail (memory counted where it lies, as class alignment gaps
// are). A 528-byte Klass left 400 bytes of each 4 KiB class chunk unused without this (10 000
// micro loaders: 57 bytes per loader, 2.7 % of live).
//
// Accounting: the pool keeps only the chunks' live counts. The space counters (used, fences,
// freed blocks) are kept by the loader that owns the bytes (loader_metaspace.cpp). Committed bytes
// of shared chunks that no live loader holds (dead loaders' bytes, padding, the unbumped rest) are
// "free in chunks".
//
// Lock order: loader → pool → chunk manager.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "chunks/chunk.hpp"
#include "common/assert.hpp"
#include "chunks/chunk_manager.hpp"

namespace metaspace {

// A micro loader's bytes in shared chunks. Lives in the loader object; written under the loader's
// lock (and the pool's, while the pool bumps).
struct MicroRecord {
  // 4 runs: a loader that allocates without interleaving needs 1 per space, 2 when a chunk fills
  // (with 4 KiB chunks ~40 % of micro loaders cross one in non-class space, ~13 % in class space).
  static constexpr int kRuns = 4;

  // A run in one word: its address in the low 48 bits (user-space addresses on x86-64 and
  // arm64 are below 2^48), its size in words above. 8 bytes a run instead of 10 keep the loader
  // object at 144 bytes (10 000 micro loaders: 16 bytes of RSS each).
  static constexpr unsigned kAddressBits = 48;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << kAddressBits) - 1;

  char* begin(int i) const { return reinterpret_cast<char*>(runs_[i] & kAddressMask); }
  size_t bytes(int i) const { return static_cast<size_t>(runs_[i] >> kAddressBits) * 8; }
  void set(int i, char* begin, size_t bytes) {
    MS_ASSERT((reinterpret_cast<uint64_t>(begin) & ~kAddressMask) == 0 && bytes % 8 == 0 &&
                  bytes / 8 < (uint64_t{1} << (64 - kAddressBits)),
              "run %p of %zu bytes cannot be packed", (void*)begin, bytes);
    runs_[i] = reinterpret_cast<uint64_t>(begin) | (uint64_t{bytes / 8} << kAddressBits);
  }

  int runs() const {
    int n = 0;
    while (n < kRuns && runs_[n] != 0) n++;
    return n;
  }
  bool empty() const { return runs_[0] == 0; }
  // True if [p, p + n) lies within one run.
  bool holds(const void* p, size_t n) const {
    const char* c = static_cast<const char*>(p);
    for (int i = 0; i < kRuns && runs_[i] != 0; i++) {
      const char* b = begin(i);
      const char* e = b + bytes(i);
      if (c >= b && c < e && n <= static_cast<size_t>(e - c)) return true;
    }
    return false;
  }
  template <typename F>
  void for_each_run(F f) const {
    for (int i = 0; i < kRuns && runs_[i] != 0; i++) f(begin(i), bytes(i));
  }

 private:
  uint64_t runs_[kRuns] = {};  // 0: slot unused; used slots come first
};

class MicroPool {
 public:
  struct Options {
    size_t chunk_bytes = 4 * 1024;   // a shared chunk: one commit granule (at least 4 KiB)
    size_t class_alignment = 8;      // of blocks in class space
  };
  // A block larger than chunk_bytes / kMaxBlockFraction graduates its loader: it would leave up
  // to that much of a shared chunk unused at the chunk's end.
  static constexpr size_t kMaxBlockFraction = 4;
  // A loader holding more than this in the pool is not micro: it graduates (its record stays).
  static constexpr size_t kMaxLoaderBytes = 8 * 1024;
  static_assert(kMaxLoaderBytes / 8 < (uint64_t{1} << (64 - MicroRecord::kAddressBits)),
                "a run's size in words fits its record word");

  MicroPool(ChunkManager& nonclass, ChunkManager& klass, const Options& options);
  // Every loader has released its runs by now: the current chunks go back.
  ~MicroPool();
  MicroPool(const MicroPool&) = delete;
  MicroPool& operator=(const MicroPool&) = delete;

  enum class Result { kDone, kGraduate, kFailed };
  // Bumps `bytes` (a multiple of 8, a fence included) in `space` for the loader whose record is
  // `r` (the caller holds the loader's lock). kGraduate: not served here, nothing changed, no
  // error set. kFailed: the chunk manager refused a chunk (its error is set).
  Result allocate(MicroRecord& r, ms_space_t space, size_t bytes, char** out);
  // The loader died: its bytes leave their chunks; a chunk nobody holds any more goes back
  // unless it is current. The record is cleared.
  void release(MicroRecord& r);
  // Returns current chunks that no live loader holds (purge: nothing is left when all died).
  void trim();

  ms_space_t space_of(const void* p) const {
    return manager(MS_SPACE_CLASS).chunk_containing(p) != nullptr ? MS_SPACE_CLASS
                                                                   : MS_SPACE_NONCLASS;
  }
  // Bytes live loaders hold in the pool's chunks of `space`.
  size_t live_bytes(ms_space_t space) const;
  // Committed bytes of the pool's chunks of `space` that no live loader holds. Takes the pool's
  // and the chunk manager's locks.
  size_t free_in_chunks_bytes(ms_space_t space) const;
  // Shared chunks of `space` held (current included).
  size_t chunks(ms_space_t space) const;
  size_t chunk_bytes() const { return options_.chunk_bytes; }
  // Changes with every change of the pool's chunks or live counts: ms_verify compares loaders'
  // figures with the pool's only if neither this nor the space counters moved meanwhile.
  uint64_t version() const {
    std::lock_guard<std::mutex> guard(lock_);
    return version_;
  }
  // Loaders told to graduate so far (record full, block or loader too large).
  size_t graduations() const {
    std::lock_guard<std::mutex> guard(lock_);
    return graduations_;
  }

  bool verify() const;

 private:
  struct Space {
    ChunkManager* manager = nullptr;
    int level = 0;
    size_t alignment = 8;
    Chunk* current = nullptr;
    char* top = nullptr;        // in current
    Chunk* tail = nullptr;      // the previous current chunk, while it has room
    char* tail_top = nullptr;
    Chunk* chunks = nullptr;    // every shared chunk, doubly linked through prev/next
    size_t chunk_count = 0;
    size_t live = 0;            // sum of the chunks' used_bytes
  };
  ChunkManager& manager(ms_space_t s) const { return *spaces_[s].manager; }
  Space& space(ms_space_t s) { return spaces_[s]; }
  bool new_chunk_locked(Space& s);
  void unlink_and_return_locked(Space& s, Chunk* c);
  // Returns c if no live loader holds bytes in it and it is neither current nor tail.
  void return_if_unused_locked(Space& s, Chunk* c);
  Result graduate();
  Result graduate_locked();
  // A bump window: the current chunk or the tail of a space.
  struct Window {
    Space* space;
    Chunk* chunk;
    char** top;
  };

  const Options options_;
  mutable std::mutex lock_;
  Space spaces_[2];
  size_t graduations_ = 0;
  uint64_t version_ = 0;
};

}  // namespace metaspace
