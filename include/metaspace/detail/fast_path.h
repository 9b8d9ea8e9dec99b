/*
 * The inline fast path of <metaspace/metaspace.h>: ms_allocate's pointer bump and exact-size
 * reuse, and the inline ms_deallocate. Included by metaspace.h after the declarations of the
 * exported calls it falls back to (ms_allocate_slow, ms_alloc, ms_deallocate); include that one.
 * Reads and writes the loader's head (detail/loader_head.h) and nothing else of the library.
 *
 * With GNU atomics builtins and without MS_NO_INLINE_FAST_PATH, ms__allocate_inline bumps and
 * reuses inline; otherwise it is the exported ms_alloc and ms_deallocate stays the exported call.
 */
#ifndef METASPACE_DETAIL_FAST_PATH_H
#define METASPACE_DETAIL_FAST_PATH_H

#ifndef METASPACE_METASPACE_H
#error "include <metaspace/metaspace.h>, not metaspace/detail/fast_path.h"
#endif

#include "loader_head.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(MS_NO_INLINE_FAST_PATH)
#include "bins.h"

#define MS__LIKELY(x) __builtin_expect(!!(x), 1)

/* The part of ms_allocate behind the bump: a request that a freed block of exactly its size can
 * serve pops that block (an exact fit is a best fit); anything else is the library's. Kept out
 * of ms_allocate's body, so that the bump stays small enough to be inlined at every call site. */
__attribute__((noinline, unused)) static void* ms__allocate_reuse(
    ms_loader_t* loader, ms_space_t space, size_t bytes, size_t n) MS__NOEXCEPT {
  struct ms__free_bins* f = ms__head_of(loader)->bins;
  /* Non-class space and 8..1024 bytes in one test (space is 0 or 1 here). fit_max is not tested
   * again: no bin holds a block above it (it is at least the largest free block), so a request
   * above it that comes here because the bump is out of room finds its bin empty; an exact fit
   * it finds is a best fit whatever fit_max says. */
  if (f != NULL && ((n - 1u) | ((size_t)space << 10)) < 1024u) {
    void* p = ms__bins_pop(f, n);
    if (p != NULL) return p;
  }
  return ms_allocate_slow(loader, space, bytes);
}

/* ms_allocate's body (metaspace.h): the fast path is a pointer bump; then the exact-size reuse
 * above; then the library. Neither counts the block: per-block counts are kept only with
 * ms_settings_t.count_allocations (or checked mode), which keeps this path closed. */
__attribute__((always_inline, unused)) static inline void* ms__allocate_inline(
    ms_loader_t* loader, ms_space_t space, size_t bytes) MS__NOEXCEPT {
  struct ms__loader_head* head = ms__head_of(loader);
  if (MS__LIKELY(loader != NULL && (unsigned)space <= 1u &&
                 __atomic_load_n(&head->cookie, __ATOMIC_RELAXED) ==
                     ((uintptr_t)loader ^ ms__handle_secret))) {
    size_t n = (bytes + 7u) & ~(size_t)7u;
    /* A request that some free block could hold goes to the reuse or the slow path. Tested before
     * the window is read, so that such a request (every one of a loader that reuses freed
     * blocks) leaves at once (reuse 108 -> 99 instructions a block). A loader whose window never
     * opens (shared, checked) keeps fit_max at 0: it passes this test every time and fails the
     * room test every time, two branches the CPU predicts. n == 0 (bytes == 0, or a size that
     * overflowed while rounding) is never above fit_max, so n <= end - top is then the whole
     * room test (top == end == NULL while the window is closed). */
    if (MS__LIKELY(n > __atomic_load_n(&head->fit_max[space], __ATOMIC_RELAXED))) {
      struct ms__bump* b = &head->bump[space];
      char* top = __atomic_load_n(&b->top, __ATOMIC_RELAXED);
      char* end = __atomic_load_n(&b->end, __ATOMIC_RELAXED);
      if (MS__LIKELY(n <= (size_t)(end - top))) {
        __atomic_store_n(&b->top, top + n, __ATOMIC_RELAXED);
        return top;
      }
    }
    return ms__allocate_reuse(loader, space, bytes, n);
  }
  return ms_allocate_slow(loader, space, bytes);
}

/* Premature deallocation, inline when it is a plain push: a block of up to 128 words that lies in
 * the loader's current chunk or the retired chunk its last out-of-line free hit goes to the head
 * of its exact-size bin. Everything else (other chunks, class space, checked mode, shared loaders,
 * bad input) is the exported ms_deallocate (which pushes class space blocks the same way, on the
 * class arena's bins, without the loader lock). */
static inline ms_error_t ms__deallocate_inline(ms_loader_t* loader, void* p,
                                               size_t bytes) MS__NOEXCEPT {
  struct ms__loader_head* head = ms__head_of(loader);
  if (MS__LIKELY(loader != NULL && __atomic_load_n(&head->cookie, __ATOMIC_RELAXED) ==
                                       ((uintptr_t)loader ^ ms__handle_secret))) {
    struct ms__free_bins* f = head->bins;
    size_t n = (bytes + 7u) & ~(size_t)7u;
    if (f != NULL && n - 1u < 1024u && ((uintptr_t)p & 7u) == 0) {
      uintptr_t top = (uintptr_t)__atomic_load_n(&head->bump[MS_SPACE_NONCLASS].top,
                                                 __ATOMIC_RELAXED);
      if (ms__bins_push(f, top, p, n, &head->fit_max[MS_SPACE_NONCLASS])) return MS_OK;
    }
  }
  return (ms_deallocate)(loader, p, bytes);
}
#define ms_deallocate(loader, p, bytes) ms__deallocate_inline((loader), (p), (bytes))
#else
/* Without GNU atomics builtins (or with MS_NO_INLINE_FAST_PATH): the exported calls. */
static inline void* ms__allocate_inline(ms_loader_t* loader, ms_space_t space,
                                        size_t bytes) MS__NOEXCEPT {
  return ms_alloc(loader, space, bytes);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* METASPACE_DETAIL_FAST_PATH_H */
