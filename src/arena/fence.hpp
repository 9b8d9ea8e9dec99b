// Checked mode: every block is followed by a fence, and an arena's fences form a list through
// the blocks' memory (newest first), so overruns can be found long after they happened.
//
//   [block: n bytes][fence: canary | n | prev] [block][fence] ...
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
  uint64_t block_bytes;
  Fence* prev;

  static constexpr size_t kBytes = 24;
  static constexpr uint64_t kLive = 0x4D4554414D455441ull;   // "METAMETA"
  static constexpr uint64_t kFreed = 0x4652454544465245ull;  // "FREEDFRE"
  static constexpr unsigned char kZapFreed = 0xF3;
  static constexpr unsigned char kZapDead = 0xD5;

  uint64_t live_canary() const { return kLive ^ reinterpret_cast<uintptr_t>(this); }
  uint64_t freed_canary() const { return kFreed ^ reinterpret_cast<uintptr_t>(this); }
  bool live() const { return canary == live_canary(); }
  bool freed() const { return canary == freed_canary(); }
  // Integer arithmetic: on a smashed fence block_bytes is garbage, and pointer arithmetic on it
  // would be undefined (the error report still wants to print the address it implies).
  char* block() const {
    return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(this) - block_bytes);
  }
};

static_assert(sizeof(Fence) == Fence::kBytes, "fence layout");

}  // namespace metaspace
