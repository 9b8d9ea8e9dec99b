// The compressed class space: one contiguous reservation whose blocks are named by 32-bit narrow
// pointers, (p - base) >> shift, with shift = log2(class alignment).
//
// Narrow 0 must mean NULL, so nothing may ever be handed out at the base: the space's first
// granule is taken as a guard chunk at creation and never committed or returned. That costs one
// granule of address space and no memory, and keeps the full range usable for the bit count
// (1 GiB at 1 KiB alignment: 20 bits), which a "+1" encoding would not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "context/context.hpp"

namespace metaspace {

class ClassSpace {
 public:
  // Reserves the space; at `wish` if possible, else anywhere (a note says so).
  ClassSpace(const NodeGeometry& geometry, CommitLimiter& limiter, ReclaimPolicy policy,
             uintptr_t wish, size_t alignment_bytes, const ContextBookkeeping& bookkeeping = {});
  ~ClassSpace();

  bool ok() const { return context_ != nullptr && context_->ok() && guard_ != nullptr; }
  Context& context() { return *context_; }
  const Context& context() const { return *context_; }

  uintptr_t base() const { return base_; }
  // The base of narrow pointers: the class space's own base, or the start of a class-data
  // archive mapped right below it (src/archive/archive_mapping.hpp), which then shares the
  // encoding; narrow_bits() then covers both.
  uintptr_t encoding_base() const { return encoding_base_; }
  void set_encoding_base(uintptr_t encoding_base) { encoding_base_ = encoding_base; }
  size_t bytes() const { return bytes_; }
  unsigned shift() const { return shift_; }
  // Bits a narrow pointer needs to name every aligned slot of the space.
  unsigned narrow_bits() const;
  // The guard is in use at the base with nothing committed, the base fits the shift, and the
  // space's context is sound. False with the reason in the last error.
  bool verify() const;
  bool contains(const void* p) const {
    return reinterpret_cast<uintptr_t>(p) - base_ < bytes_;
  }

  uint32_t encode(const void* p) const {
    return p == nullptr ? 0
                        : static_cast<uint32_t>((reinterpret_cast<uintptr_t>(p) - encoding_base_) >> shift_);
  }
  void* decode(uint32_t narrow) const {
    return narrow == 0 ? nullptr
                       : reinterpret_cast<void*>(encoding_base_ + (uintptr_t{narrow} << shift_));
  }

 private:
  std::unique_ptr<Context> context_;
  Chunk* guard_ = nullptr;
  uintptr_t base_ = 0;
  uintptr_t encoding_base_ = 0;  // base_ unless an archive lies below
  size_t bytes_ = 0;
  unsigned shift_ = 3;
};

}  // namespace metaspace
