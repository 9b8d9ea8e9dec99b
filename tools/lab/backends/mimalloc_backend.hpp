#pragma once

namespace lab {

// Only in metaspace-lab-mimalloc (see mimalloc_backend.cpp).
void register_mimalloc_backend();

}  // namespace lab
