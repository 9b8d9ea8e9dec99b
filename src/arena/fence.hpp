// Checked mode: every block is followed by a fence, and an arena's fences form a list through
// the blocks' memory (newest first), so overruns can be found long after they happened.
//
//   [block: n bytes, the last `slack` of them past the request][fence: canary | n + slack | prev]
//
// A request is rounded up to 8 bytes; the up to 7 bytes of rounding slack are filled with a
// pattern and checked with the fence, so one byte past a 61-byte request is an overrun too.
// (The size is a multiple of 8: its low 3 bits carry the slack.)
//
// The canary is a constant xor'ed with the fence's own address, so a fence copied elsewhere or
// a stale one is not mistaken for a live one. Deallocation flips it to the "freed" constant,
// which makes a second free of the block recognisable. Freed blocks are zapped, and chunks of
// destroyed loaders are zapped before they go back, so stale readers see a pattern, not data.
#pragma once

#include <metaspace/types.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/error.hpp"

namespace metaspace {

struct Fence {
  uint64_t canary;
  uint64_t size_and_slack;  // block bytes (a multiple of 8) | bytes of it past the request
  Fence* prev;

  static constexpr size_t kBytes = 24;
  static constexpr uint64_t kLive = 0x4D4554414D455441ull;   // "METAMETA"
  static constexpr uint64_t kFreed = 0x4652454544465245ull;  // "FREEDFRE"
  static constexpr unsigned char kZapFreed = 0xF3;
  static constexpr unsigned char kZapDead = 0xD5;
  static constexpr unsigned char kSlack = 0xFB;  // the rounding slack of a live block

  uint64_t block_bytes() const { return size_and_slack & ~uint64_t{7}; }
  size_t slack_bytes() const { return static_cast<size_t>(size_and_slack & 7); }
  // The slack still shows the pattern (only meaningful on a live fence).
  bool slack_intact() const {
    const unsigned char* s = reinterpret_cast<const unsigned char*>(this) - slack_bytes();
    for (size_t i = 0; i < slack_bytes(); i++) {
      if (s[i] != kSlack) return false;
    }
    return true;
  }

  uint64_t live_canary() const { return kLive ^ reinterpret_cast<uintptr_t>(this); }
  uint64_t freed_canary() const { return kFreed ^ reinterpret_cast<uintptr_t>(this); }
  bool live() const { return canary == live_canary(); }
  bool freed() const { return canary == freed_canary(); }
  // Integer arithmetic: on a smashed fence block_bytes is garbage, and pointer arithmetic on it
  // would be undefined (the error report still wants to print the address it implies).
  char* block() const {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(this) - block_bytes());
  }
};

static_assert(sizeof(Fence) == Fence::kBytes, "fence layout");

// The fences of one owner (an arena, or a micro loader's pooled blocks), newest first.
// `owner` only names it in error messages.
struct FenceList {
  Fence* newest = nullptr;
  size_t count = 0;

  // Writes a live fence behind [block, block + bytes), whose last `slack` bytes lie past the
  // request, and links it.
  Fence* install(char* block, size_t bytes, size_t slack) {
    Fence* f = reinterpret_cast<Fence*>(block + bytes);
    f->canary = f->live_canary();
    f->size_and_slack = bytes | slack;
    std::memset(block + bytes - slack, Fence::kSlack, slack);
    f->prev = newest;
    newest = f;
    count++;
    return f;
  }

  // Before block [p, p + n) is freed: its fence must be live, of this size, its slack intact.
  static ms_error_t check_free(const void* owner, void* p, size_t n) {
    Fence* f = reinterpret_cast<Fence*>(static_cast<char*>(p) + n);
    if (f->freed()) return fail(MS_ERR_DOUBLE_FREE, "block %p (%zu bytes) freed twice", p, n);
    if (!f->live() || f->block_bytes() != n) {
      return fail(MS_ERR_OVERWRITE,
                  "%p: block %p (%zu bytes) overrun or freed with a wrong size: fence at "
                  "%p expected canary %#llx and size %zu, found %#llx and %zu",
                  owner, p, n, (void*)f, (unsigned long long)f->live_canary(), n,
                  (unsigned long long)f->canary, static_cast<size_t>(f->block_bytes()));
    }
    if (!f->slack_intact()) {
      return fail(MS_ERR_OVERWRITE, "%p: block %p (%zu bytes) overrun into its %zu bytes "
                  "of rounding slack", owner, p, n - f->slack_bytes(), f->slack_bytes());
    }
    return MS_OK;
  }

  // Marks the (checked) block freed and zaps it.
  static void mark_freed(void* p, size_t n) {
    Fence* f = reinterpret_cast<Fence*>(static_cast<char*>(p) + n);
    f->canary = f->freed_canary();
    std::memset(p, Fence::kZapFreed, n);
  }

  // All fences intact? Follows a link only into memory `handed_out(p, bytes)` accepts and never
  // more links than fences were installed: a smashed link is reported, not chased.
  template <typename HandedOut>
  ms_error_t check(const void* owner, HandedOut handed_out) const {
    size_t n = 0;
    for (const Fence* f = newest; f != nullptr; f = f->prev) {
      if (n >= count || reinterpret_cast<uintptr_t>(f) % 8 != 0 || !handed_out(f, Fence::kBytes)) {
        return fail(MS_ERR_OVERWRITE, "%p: fence list broken, link to %p after %zu fences", owner,
                    (const void*)f, n);
      }
      if (!f->live() && !f->freed()) {
        return fail(MS_ERR_OVERWRITE,
                    "%p: block %p (%zu bytes) overrun: fence at %p expected canary %#llx, "
                    "found %#llx", owner, (void*)f->block(), static_cast<size_t>(f->block_bytes()),
                    (const void*)f, (unsigned long long)f->live_canary(),
                    (unsigned long long)f->canary);
      }
      if (f->live() && !f->slack_intact()) {
        return fail(MS_ERR_OVERWRITE, "%p: block %p (%zu bytes) overrun into its %zu bytes of "
                    "rounding slack", owner, (void*)f->block(),
                    static_cast<size_t>(f->block_bytes()) - f->slack_bytes(), f->slack_bytes());
      }
      n++;
    }
    if (n != count) {
      return fail(MS_ERR_OVERWRITE, "%p: %zu fences linked, %zu installed", owner, n, count);
    }
    return MS_OK;
  }
};

}  // namespace metaspace
