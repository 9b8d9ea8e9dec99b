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

#include <cstddef>
#include <cstdint>

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

}  // namespace metaspace
