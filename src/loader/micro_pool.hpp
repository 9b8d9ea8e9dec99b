// The micro pool: where micro loaders (one hidden class, lambda or reflection stub each, ~2 KiB)
// get their blocks without owning chunks, and standard loaders their first Klasses (up to the
// same limits; loader_metaspace.hpp says why only those). "Loader" below means either.
// docs/design.md ("The micro pool") explains the design and the figures that shaped it.
//
// Per space one shared chunk, a commit granule, is current; blocks of all loaders are bumped off
// it back to back under the pool's lock. What holds:
// - A shared chunk's Chunk::used_bytes is the bytes live loaders hold in it. The chunk goes back
//   to the chunk manager when that reaches zero and it is not current: its granule's return.
// - A loader's bytes are runs (contiguous bytes it holds in one shared chunk) in its MicroRecord;
//   a block is the loader's exactly when it lies inside one of its runs, so death is O(runs).
//   When the record is full, or the block or the loader is not micro any more
//   (kMaxBlockFraction, kMaxLoaderBytes), allocate() answers kGraduate and the loader continues
//   with private arenas.
// - Class blocks start at the class alignment; the padding in front of one belongs to no run.
// - Besides the current chunk a space has a tail window (the rest of the chunk that was current
//   before) and holes: dead loaders' runs in chunks survivors hold, each a Hole written in its
//   own bytes, on its space's size bin and on its chunk's list (Chunk::first_hole). New blocks go
//   to holes before the current chunk; the hole a block comes from is the space's hole window.
// - The pool keeps only the chunks' live counts; the space counters are kept by the loader that
//   owns the bytes (loader_metaspace.cpp). Committed bytes of shared chunks that no live loader
//   holds are "free in chunks".
//
// Lock order: loader → pool → chunk manager.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "chunks/chunk.hpp"
#include "common/assert.hpp"
#include "common/mutex.hpp"
#include "common/units.hpp"
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
  // object at 128 bytes.
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
    // Dead loaders' runs become holes for new blocks. Off in checked mode, where a dead
    // loader's pooled bytes keep showing the 0xD5 pattern while its chunk is held
    // (docs/guarantees.md); a hole's links would overwrite them.
    bool reuse_dead_runs = true;
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
    std::lock_guard<Mutex> guard(lock_);
    return version_;
  }
  // Loaders told to graduate so far (record full, block or loader too large).
  size_t graduations() const {
    std::lock_guard<Mutex> guard(lock_);
    return graduations_;
  }

  // Holes of `space` (not counting the hole window) and their bytes.
  size_t holes(ms_space_t space) const;
  size_t hole_bytes(ms_space_t space) const;
  // True if [p, p + n) overlaps no hole and not the hole window (ms_verify checks every live
  // loader's runs with it). Takes the pool's and the chunk manager's locks.
  bool clear_of_holes(const void* p, size_t n) const;

  bool verify() const;

 private:
  // A hole's description, in its first bytes.
  struct Hole {
    Hole* bin_next;
    Hole* bin_prev;
    Hole* chunk_next;
    Hole* chunk_prev;
    size_t bytes;
    char* begin() { return reinterpret_cast<char*>(this); }
    char* end() { return begin() + bytes; }
  };
  static constexpr size_t kMinHoleBytes = sizeof(Hole);
  // Size bins: four a power of two from 32 bytes up (64 cover holes up to 2^21 bytes).
  static constexpr int kBins = 64;
  static int bin_of(size_t bytes);
  static size_t bin_floor(int bin);

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
    // Holes: bins (bit i of bin_map set iff bins[i] is not empty), their count and bytes.
    Hole* bins[kBins] = {};
    uint64_t bin_map = 0;
    size_t hole_count = 0;
    size_t hole_bytes = 0;
    // The hole window: [hole_top, hole_end) in hole_chunk, on no list.
    Chunk* hole_chunk = nullptr;
    char* hole_top = nullptr;
    char* hole_end = nullptr;
  };
  ChunkManager& manager(ms_space_t s) const { return *spaces_[s].manager; }
  Space& space(ms_space_t s) { return spaces_[s]; }
  bool new_chunk_locked(Space& s);
  void unlink_and_return_locked(Space& s, Chunk* c);
  // Returns c (true) if no live loader holds bytes in it and it is neither current nor tail.
  bool return_if_unused_locked(Space& s, Chunk* c);
  Result graduate();
  Result graduate_locked();
  // Holes (micro_pool.cpp, "holes").
  Chunk* chunk_of(const Space& s, const void* p) const;
  Hole* first_hole(const Chunk* c) const;
  void set_first_hole(Chunk* c, Hole* h) const;
  // Makes [begin, end) of chunk c a hole, merged with holes and windows it touches.
  void add_hole_locked(Space& s, Chunk* c, char* begin, char* end);
  // [begin, end) as a hole on both lists, without merging; less than a Hole stays dead bytes.
  void link_hole_locked(Space& s, Chunk* c, char* begin, char* end);
  void unlink_hole_locked(Space& s, Chunk* c, Hole* h);
  // The hole ending at p / beginning at p in c, or null (a walk over c's holes).
  Hole* hole_ending_at(const Chunk* c, const char* p) const;
  Hole* hole_at(const Chunk* c, const char* p) const;
  // Replaces the hole window by a hole where a block of `bytes` at `alignment` fits (the
  // largest); false if there is none. The old window's rest becomes a hole.
  bool open_hole_window_locked(Space& s, size_t bytes, size_t alignment);
  void close_hole_window_locked(Space& s);
  bool verify_holes_locked(int i, const Space& s) const;
  // A bump window: the current chunk or the tail of a space.
  struct Window {
    Space* space;
    Chunk* chunk;
    char** top;
    char* end;
  };

  const Options options_;
  size_t hole_unit_ = kWordBytes;  // Chunk::first_hole counts these; holes start at a multiple
  mutable Mutex lock_;
  Space spaces_[2];
  size_t graduations_ = 0;
  uint64_t version_ = 0;
};

}  // namespace metaspace
