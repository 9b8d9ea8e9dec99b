// Backing memory for the free-block structures' tests: `count` slots of `words_per_slot` words
// each, so blocks of any size up to a slot never overlap.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/error.hpp"

namespace metaspace::test {

struct BlockSlots {
  BlockSlots(size_t count, size_t words_per_slot)
      : words_per_slot(words_per_slot), words(count * words_per_slot) {}
  void* at(size_t i) { return &words[i * words_per_slot]; }
  size_t words_per_slot;
  std::vector<uint64_t> words;
};

}  // namespace metaspace::test

#define ASSERT_VERIFIED(x) ASSERT_TRUE((x).verify()) << ms_last_error_text()
