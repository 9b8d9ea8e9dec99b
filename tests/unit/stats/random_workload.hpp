// A random load/unload workload on the public API, for tests that check invariants after it:
// loaders of all kinds load "classes" (one class-space block of Klass size plus a dozen
// non-class blocks of method/constant pool sizes), free some blocks early, die, and the
// metaspace is purged now and then.
#pragma once

#include <gtest/gtest.h>
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "support/accounting.hpp"

namespace metaspace::test {

class RandomWorkload {
 public:
  RandomWorkload(ms_metaspace_t* ms, unsigned seed) : ms_(ms), rng_(seed) {}
  ~RandomWorkload() {
    for (Loader& l : loaders_) ms_loader_destroy(l.handle);
  }

  // One random action. Fails the test (non-fatally) if the library refuses one.
  void step() {
    unsigned dice = rng_() % 100;
    if (loaders_.empty() || dice < 15) {
      create();
    } else if (dice < 70) {
      load(pick(), 1 + rng_() % 40);
    } else if (dice < 85) {
      free_some(pick());
    } else if (dice < 97) {
      destroy(pick());
    } else {
      ms_purge(ms_);
    }
  }

  // One step, then ms_verify and the accounting identity with the bookkeeping included:
  // committed = used + free in chunks + free chunks + free blocks + fences + overhead.
  void step_checked() {
    step();
    ASSERT_EQ(ms_verify(ms_), MS_OK) << ms_last_error_text();
    ms_stats_t st;
    ASSERT_EQ(ms_get_stats(ms_, &st), MS_OK);
    for (const ms_space_stats_t* sp : {&st.space[0], &st.space[1], &st.total}) {
      EXPECT_EQ(sp->committed_bytes, test::accounted_bytes(*sp));
    }
    EXPECT_GT(st.space[MS_SPACE_NONCLASS].overhead_bytes, 0u) << "loader objects are counted";
  }

  // A new loader of a random kind, with a few classes loaded.
  void create() {
    // Mostly standard loaders, many micro ones (reflection, lambdas), a boot loader rarely.
    unsigned dice = rng_() % 20;
    ms_loader_kind_t kind = dice == 0 ? MS_LOADER_BOOT : dice < 12 ? MS_LOADER_STANDARD
                                                                   : MS_LOADER_MICRO;
    ms_loader_t* l = ms_loader_create(ms_, kind, 0);
    ASSERT_NE(l, nullptr) << ms_last_error_text();
    loaders_.push_back({l, kind, {}});
    load(loaders_.size() - 1, kind == MS_LOADER_MICRO ? 1 : 1 + rng_() % 60);
  }

  std::vector<ms_loader_t*> live() const {
    std::vector<ms_loader_t*> v;
    for (const Loader& l : loaders_) v.push_back(l.handle);
    return v;
  }
  // The kind each live loader was created with, in live() order.
  std::vector<ms_loader_kind_t> kinds() const {
    std::vector<ms_loader_kind_t> v;
    for (const Loader& l : loaders_) v.push_back(l.kind);
    return v;
  }

 private:
  struct Loader {
    ms_loader_t* handle;
    ms_loader_kind_t kind;
    std::vector<std::pair<void*, size_t>> blocks;
  };

  size_t pick() { return rng_() % loaders_.size(); }

  void allocate(Loader& l, ms_space_t space, size_t bytes) {
    void* p = ms_allocate(l.handle, space, bytes);
    ASSERT_NE(p, nullptr) << ms_last_error_text();
    std::memset(p, 0x5A, bytes);
    l.blocks.push_back({p, bytes});
  }

  void load(size_t i, unsigned classes) {
    Loader& l = loaders_[i];
    if (l.kind == MS_LOADER_MICRO) classes = 1;
    for (unsigned c = 0; c < classes; c++) {
      allocate(l, MS_SPACE_CLASS, 440 + rng_() % 700);
      unsigned blocks = 4 + rng_() % 20;
      for (unsigned b = 0; b < blocks; b++) {
        // Log-uniform 16 B .. 2 KiB, now and then a constant pool or a table of 4..24 KiB.
        size_t bytes = rng_() % 50 == 0 ? 4096 + rng_() % 20480
                                        : size_t{16} << (rng_() % 8) | (rng_() % 16) * 8;
        allocate(l, MS_SPACE_NONCLASS, bytes);
      }
    }
  }

  void free_some(size_t i) {
    Loader& l = loaders_[i];
    std::shuffle(l.blocks.begin(), l.blocks.end(), rng_);
    size_t n = std::min<size_t>(l.blocks.size(), 1 + rng_() % 8);
    for (size_t k = 0; k < n; k++) {
      auto [p, bytes] = l.blocks.back();
      l.blocks.pop_back();
      EXPECT_EQ(ms_deallocate(l.handle, p, bytes), MS_OK) << ms_last_error_text();
    }
  }

  void destroy(size_t i) {
    EXPECT_EQ(ms_loader_destroy(loaders_[i].handle), MS_OK) << ms_last_error_text();
    loaders_.erase(loaders_.begin() + static_cast<long>(i));
  }

  ms_metaspace_t* ms_;
  std::mt19937 rng_;
  std::vector<Loader> loaders_;
};

}  // namespace metaspace::test
