// The metadata of N classes with the workload model's sizes (docs/workload-model.md, "generated
// classes"), filled the same way into an archive builder (dump) or into a loader (build by
// allocation): the one generator of bench_archive and the lab's `startup` scenario, so that both
// measure the same archive.
//
// A class is a Klass of 66..78 words (class space) and 37 non-class blocks (sizes from the model's
// mix: 40 % 2..8 words, 45 % 9..16, 8 % 17..40, 7 % 41..100). Every non-class block points at its
// Klass (a full pointer slot), the first one also holds it as a narrow class pointer; each Klass
// points at its first block and at the previous class (the chain a walk follows). The rest of
// every block is a pattern, so every byte is written as a runtime initializes its metadata.
//
// Header-only; its users link the library (it calls the C API).
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace archive_workload {

struct Shape {
  std::vector<std::size_t> klass_bytes;            // per class
  std::vector<std::vector<std::size_t>> nonclass;  // per class
  std::size_t classes() const { return klass_bytes.size(); }
};

inline Shape make_shape(std::size_t classes, std::uint64_t seed = 387) {
  std::mt19937_64 rng(seed);
  Shape s;
  s.klass_bytes.resize(classes);
  s.nonclass.resize(classes);
  for (std::size_t c = 0; c < classes; c++) {
    s.klass_bytes[c] = (66 + rng() % 13) * 8;
    s.nonclass[c].resize(37);
    for (std::size_t& b : s.nonclass[c]) {
      const unsigned r = rng() % 100;
      const std::size_t words = r < 40 ? 2 + rng() % 7 : r < 85 ? 9 + rng() % 8 : r < 93 ? 17 + rng() % 24 : 41 + rng() % 60;
      b = words * 8;
    }
  }
  return s;
}

// Fills one class's blocks: `alloc(space, bytes)` hands out a block, `mark(slot, narrow)` records a
// pointer slot (a no-op when building), `encode(klass)` gives the narrow class pointer. `prev` is
// the previously filled class (word 1 of each Klass), so one Filler per chain (per thread).
struct Filler {
  void* prev = nullptr;

  template <class Alloc, class Mark, class Encode>
  void klass(const Shape& s, std::size_t c, Alloc alloc, Mark mark, Encode encode, std::vector<void*>* klasses = nullptr) {
    auto* k = static_cast<char*>(alloc(MS_SPACE_CLASS, s.klass_bytes[c]));
    if (k == nullptr) return;
    std::memset(k, 0x4b, s.klass_bytes[c]);
    void** kw = reinterpret_cast<void**>(k);
    kw[1] = prev;
    mark(&kw[1], false);
    void* first = nullptr;
    for (std::size_t b = 0; b < s.nonclass[c].size(); b++) {
      auto* p = static_cast<char*>(alloc(MS_SPACE_NONCLASS, s.nonclass[c][b]));
      if (p == nullptr) continue;
      std::memset(p, 0x6d, s.nonclass[c][b]);
      void** pw = reinterpret_cast<void**>(p);
      pw[0] = k;
      mark(&pw[0], false);
      if (first == nullptr) {
        first = p;
        const std::uint32_t n = encode(k);
        std::memcpy(p + 8, &n, 4);
        mark(p + 8, true);
      }
    }
    kw[0] = first;
    mark(&kw[0], false);
    prev = k;
    if (klasses != nullptr) klasses->push_back(k);
  }
};

// Classes [from, to) of `s` allocated and written into `loader` of `ms`.
inline void build(ms_metaspace_t* ms, ms_loader_t* loader, const Shape& s, std::size_t from, std::size_t to,
                  std::vector<void*>* klasses = nullptr) {
  Filler f;
  for (std::size_t c = from; c < to; c++) {
    f.klass(
        s, c, [&](ms_space_t sp, std::size_t n) { return ms_allocate(loader, sp, n); }, [](void*, bool) {},
        [&](void* k) { return ms_encode_class(ms, k); }, klasses);
  }
}

// Classes [0, classes) of `s` dumped into an archive written to `path` for `settings`, at
// `base` (0: the library's default). Roots "first" and "last": the ends of the Klass chain.
// MS_OK or the failing call's error (ms_last_error_text says more).
inline ms_error_t dump(const Shape& s, std::size_t classes, const ms_settings_t& settings, std::uintptr_t base,
                       const char* path) {
  ms_archive_builder_t* b = ms_archive_begin(&settings, base);
  if (b == nullptr) return ms_last_error();
  Filler f;
  ms_error_t e = MS_OK;
  auto keep = [&e](ms_error_t r) {
    if (e == MS_OK) e = r;
  };
  for (std::size_t c = 0; c < classes && e == MS_OK; c++) {
    f.klass(
        s, c,
        [&](ms_space_t sp, std::size_t n) {
          void* p = ms_archive_allocate(b, sp, n);
          if (p == nullptr) keep(ms_last_error());
          return p;
        },
        [&](void* slot, bool narrow) { keep(narrow ? ms_archive_mark_narrow_class(b, slot) : ms_archive_mark_pointer(b, slot)); },
        [&](void* k) { return ms_archive_encode_class(b, k); });
    if (c == 0) keep(ms_archive_set_root(b, "first", f.prev));
  }
  if (e == MS_OK) keep(ms_archive_set_root(b, "last", f.prev));
  if (e == MS_OK) keep(ms_archive_write(b, path));
  ms_archive_discard(b);
  return e;
}

}  // namespace archive_workload
