#pragma once

namespace lab {

// Only in metaspace-lab-jemalloc (see jemalloc_backend.cpp).
void register_jemalloc_backend();

}  // namespace lab
