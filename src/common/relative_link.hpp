// A link from one of the library's structures to another of the same type, in 4 bytes instead
// of 8: the target's distance from the 16-byte line holding the link, in 16-byte units. Both lie
// in one of the library's bookkeeping ranges (4 GiB each, slab objects, 16-byte aligned), so
// ±32 GiB always reach; 0 is null (a structure never links to itself). It reads and assigns like
// a T*; it cannot be copied as a value (the distance would name another target), only assigned
// what another link names. Used by chunk headers (chunks/chunk.hpp) and loader objects' registry
// links (loader/loader_metaspace.hpp): 8 and 4 links' worth of bytes on structures counted in
// the thousands.
#pragma once

#include <cstdint>

#include "common/assert.hpp"

namespace metaspace {

template <typename T>
class RelativeLink {
 public:
  RelativeLink() = default;
  RelativeLink(const RelativeLink&) = delete;
  RelativeLink& operator=(const RelativeLink& other) { return *this = other.get(); }
  RelativeLink& operator=(T* target) {
    set(target);
    return *this;
  }
  operator T*() const { return get(); }
  T* operator->() const { return get(); }

 private:
  static constexpr unsigned kUnitShift = 4;
  intptr_t line() const {
    return static_cast<intptr_t>(reinterpret_cast<uintptr_t>(this) & ~uintptr_t{15});
  }
  T* get() const {
    return units_ == 0 ? nullptr
                       : reinterpret_cast<T*>(line() + (intptr_t{units_} << kUnitShift));
  }
  void set(T* target) {
    if (target == nullptr) {
      units_ = 0;
      return;
    }
    intptr_t distance = static_cast<intptr_t>(reinterpret_cast<uintptr_t>(target)) - line();
    MS_ASSERT((distance & ((intptr_t{1} << kUnitShift) - 1)) == 0 && distance != 0 &&
                  (distance >> kUnitShift) >= INT32_MIN && (distance >> kUnitShift) <= INT32_MAX,
              "%p cannot be linked from %p", (void*)target, (const void*)this);
    units_ = static_cast<int32_t>(distance >> kUnitShift);
  }
  int32_t units_ = 0;
};

}  // namespace metaspace
