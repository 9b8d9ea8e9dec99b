// A GC threshold callback for tests: counts its calls and keeps the arguments of the last one.
// Pass GcCallbacks::record as the callback and the recorder as its user pointer.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

namespace metaspace::test {

struct GcCallbacks {
  int calls = 0;
  size_t last_committed = 0;
  ms_metaspace_t* last_ms = nullptr;

  static void record(ms_metaspace_t* ms, size_t committed_bytes, void* user) {
    auto* self = static_cast<GcCallbacks*>(user);
    self->calls++;
    self->last_committed = committed_bytes;
    self->last_ms = ms;
  }
};

}  // namespace metaspace::test
