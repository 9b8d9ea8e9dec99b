/*
 * The exact-size bins of freed blocks as the inline paths use them: push and pop on a loader's
 * ms__free_bins (detail/loader_head.h). Shared by the inline ms_deallocate and reuse
 * (detail/fast_path.h) and the library's owner path for class space (docs/threads.md). Needs
 * GNU atomics builtins; without them nothing here is defined and every call goes out of line.
 */
#ifndef METASPACE_DETAIL_BINS_H
#define METASPACE_DETAIL_BINS_H

#include "loader_head.h"

#if defined(__GNUC__)
#ifdef __cplusplus
extern "C" {
#endif

/* The owner's side of the exclusion from ms_verify (docs/threads.md): a plain store and a load,
 * ordered against ms_verify's store and load by the membarrier() that ms_verify issues. 0: a
 * reader is walking the lists, take the out-of-line path (it waits on the loader's lock). */
static inline int ms__bins_enter(struct ms__free_bins* f) MS__NOEXCEPT {
  __atomic_store_n(&f->busy, 1u, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(&f->excluded, __ATOMIC_ACQUIRE) == 0) return 1;
  __atomic_store_n(&f->busy, 0u, __ATOMIC_RELEASE);
  return 0;
}

static inline void ms__bins_leave(struct ms__free_bins* f) MS__NOEXCEPT {
  __atomic_store_n(&f->busy, 0u, __ATOMIC_RELEASE);
}

/* Whether f has a bin of w words (1..128): the small ones always, the medium ones (33..128)
 * once the first block of such a size was freed. */
static inline int ms__bin_exists(const struct ms__free_bins* f, size_t w) MS__NOEXCEPT {
  return ((uintptr_t)f->medium | (uintptr_t)(w <= 32u)) != 0;
}

/* The bin of w words in f, which exists (ms__bin_exists). Small or medium is chosen by a
 * conditional move, not a branch: in the size mix the two come in random order (89 % small),
 * and the mispredicted branch was ~15 % of an inline reuse's samples. Each kind's base is its
 * array moved back by its first size, so the bin is base + w entries for both (computed as
 * integers: the medium base is formed, never used, while there are no medium bins). */
static inline struct ms__free_bin* ms__bin_at(struct ms__free_bins* f, size_t w) MS__NOEXCEPT {
  uintptr_t small_base = (uintptr_t)f->bin - 1u * sizeof(struct ms__free_bin);
  uintptr_t medium_base = (uintptr_t)f->medium + offsetof(struct ms__medium_bins, bin) -
                          33u * sizeof(struct ms__free_bin);
  uintptr_t small = w <= 32u;
  /* Opaque to the optimizer (no instruction): otherwise it may thread the caller's later test of
   * the same size into a branch here, as it did in the inline free. */
  __asm__("" : "+r"(small));
  uintptr_t base = small ? small_base : medium_base;
  return (struct ms__free_bin*)(base + w * sizeof(struct ms__free_bin));
}

/* The non-empty mask word of the bin of w words, and its bit. Only when a bin empties or fills,
 * so not on the way of a push or pop to a bin that keeps blocks. */
static inline uint64_t* ms__bin_mask_of(struct ms__free_bins* f, size_t w,
                                        uint64_t* bit) MS__NOEXCEPT {
  if (w <= 32u) {
    *bit = (uint64_t)1 << (w - 1u);
    return &f->mask;
  }
  *bit = (uint64_t)1 << ((w - 33u) % 64u);
  return &f->medium->mask[(w - 33u) / 64u];
}

/* Pops a block of exactly n bytes (8..1024, a multiple of 8) off f's bin of that size if the
 * bin's first block has tag 0 and the budget allows; NULL otherwise (the caller takes the
 * library's path). Shared by the inline reuse (non-class bins) and the library's owner path for
 * class space (docs/threads.md). Counts nothing: the bins are published only while allocations
 * are not counted. */
__attribute__((always_inline, unused)) static inline void* ms__bins_pop(
    struct ms__free_bins* f, size_t n) MS__NOEXCEPT {
  size_t w = n / 8u;
  if (!ms__bins_enter(f)) return NULL;
  if (!ms__bin_exists(f, w)) {
    ms__bins_leave(f);
    return NULL;
  }
  struct ms__free_bin* bin = ms__bin_at(f, w);
  uintptr_t block = bin->first;
  intptr_t budget = __atomic_load_n(&f->budget, __ATOMIC_RELAXED);
  /* The block's own link carries its tag: only tag 0 (freed here, own space) is taken. */
  uintptr_t next = block != 0 ? *(uintptr_t*)block : 7u;
  if ((next & 7u) == 0 && budget >= (intptr_t)n) {
    bin->first = next;
    if (next == 0) {
      uint64_t bit;
      uint64_t* mask = ms__bin_mask_of(f, w, &bit);
      *mask &= ~bit;
    }
    __atomic_store_n(&bin->count, bin->count - 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&f->budget, budget - (intptr_t)n, __ATOMIC_RELAXED);
    ms__bins_leave(f);
    return (void*)block;
  }
  ms__bins_leave(f);
  return NULL;
}

/* Pushes the block p of n bytes (8..1024, a multiple of 8, p 8-byte aligned) on f's bin of its
 * size if it lies in the handed-out part of the current chunk, [f->current_lo, top), or of the
 * retired chunk [f->retired_lo, f->retired_hi), its bin exists and the budget allows; raises
 * *fit_max. 1 if filed, 0: the caller takes the library's path. Shared by the inline free
 * (non-class bins) and the library's owner path for class space (docs/threads.md). */
__attribute__((always_inline, unused)) static inline int ms__bins_push(
    struct ms__free_bins* f, uintptr_t top, void* p, size_t n, uint32_t* fit_max) MS__NOEXCEPT {
  uintptr_t a = (uintptr_t)p;
  /* Inside [lo, hi) with all n bytes: three compares, safe against wrap-around. */
  int owned = (a >= f->current_lo && a < top && n <= top - a) ||
              (a >= f->retired_lo && a < f->retired_hi && n <= f->retired_hi - a);
  if (!owned || !ms__bins_enter(f)) return 0;
  size_t w = n / 8u;
  intptr_t budget = __atomic_load_n(&f->budget, __ATOMIC_RELAXED);
  if (ms__bin_exists(f, w) && budget >= (intptr_t)n) {
    struct ms__free_bin* bin = ms__bin_at(f, w);
    uintptr_t first = bin->first;
    *(uintptr_t*)p = first;
    bin->first = a;
    if (first == 0) {
      uint64_t bit;
      uint64_t* mask = ms__bin_mask_of(f, w, &bit);
      *mask |= bit;
    }
    __atomic_store_n(&bin->count, bin->count + 1u, __ATOMIC_RELAXED);
    __atomic_store_n(&f->budget, budget - (intptr_t)n, __ATOMIC_RELAXED);
    if (n > *fit_max) __atomic_store_n(fit_max, (uint32_t)n, __ATOMIC_RELAXED);
    ms__bins_leave(f);
    return 1;
  }
  ms__bins_leave(f);
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* __GNUC__ */

#endif /* METASPACE_DETAIL_BINS_H */
