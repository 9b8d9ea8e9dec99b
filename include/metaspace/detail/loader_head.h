/*
 * libmetaspace's private layout: the head of every loader object, which the inline fast path of
 * <metaspace/metaspace.h> reads and writes. Not an API: names start with ms__ / MS__, and only
 * the inline code (detail/bins.h, detail/fast_path.h) and the library itself touch them.
 *
 * The layout is part of the ABI of one soname (docs/abi.md): a change of it changes the soname
 * and the symbol version, so an executable compiled against another layout never runs against
 * this library.
 */
#ifndef METASPACE_DETAIL_LOADER_HEAD_H
#define METASPACE_DETAIL_LOADER_HEAD_H

#include "../types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ms__bump {
  char* top;         /* next free byte of the current chunk */
  char* end;         /* end of its committed part; top == end == NULL while the fast path is off */
  /* Not used by the inline paths. They used to count their blocks here (a store per block; named
   * allocs, then unused_allocs) and no longer count (ms_settings_t.count_allocations); kept so that
   * the layout, and the soname, stay. An executable built against an older header may still
   * write it while it bumps, so the library reads it only where no inline path bumps: a shared
   * loader's bump[MS_SPACE_NONCLASS].spare holds the key to its threads' windows. */
  uint64_t spare;
};

/* A non-class arena's exact-size bins of freed blocks, made when the loader first frees
 * something, published (ms__loader_head.bins) only for loaders the inline paths may serve: not
 * shared, not checked. Small bins hold 1..32 words; the medium bins (33..128 words) come with the
 * first free of such a size. A free block's first word links to the next block of its bin; the
 * link's low 3 bits are a tag, 0 for a block the runtime freed that lies in the loader's own
 * non-class chunks: the only blocks the inline paths file and take. Everything else (other tags,
 * the size tree above 128 words, the counters by origin) is the library's, out of line. */
struct ms__free_bin {
  uintptr_t first;   /* first block, or 0 */
  size_t count;      /* blocks in the bin (read by statistics from other threads: atomic) */
};

struct ms__medium_bins {
  uint64_t mask[2];               /* bit i: bin of 33 + i words is not empty */
  struct ms__free_bin bin[96];    /* 33..128 words */
};

struct ms__free_bins {
  uint64_t mask;       /* bit i: bin of i + 1 words is not empty */
  uint32_t busy;       /* 1 while the owner is inside an inline free or reuse */
  uint32_t excluded;   /* non-zero while ms_verify walks the lists: the inline paths step aside */
  intptr_t budget;     /* bytes inline frees and reuses may still move before the space counters
                          must be brought up to date (out of line) */
  uintptr_t current_lo;  /* start of the current chunk: [current_lo, bump.top) is handed out */
  uintptr_t retired_lo;  /* a retired chunk's handed-out part [retired_lo, retired_hi): the */
  uintptr_t retired_hi;  /* last one an out-of-line free found a block in (frees cluster) */
  struct ms__medium_bins* medium;  /* NULL until the first free of 33..128 words */
  struct ms__free_bin bin[32];     /* 1..32 words */
};

/* A loader handle is the address of the loader's head (16-byte aligned) plus a tag in its low 4
 * bits, chosen when the loader is created so that no live handle equals one of the 1 024 handles
 * that died last: a destroyed loader's object is reused at once, and a stale handle to it still
 * gets MS_ERR_DESTROYED (docs/guarantees.md). The inline paths clear the tag to reach the head. */
#define MS__HANDLE_TAG_MASK ((uintptr_t)15u)

struct ms__loader_head {
  /* (uintptr_t)handle ^ ms__handle_secret while the loader is alive, else 0: the handle, tag
   * included, so a stale handle to a reused object does not match its new cookie. A handle that is
   * not a live loader (another struct, the metaspace handle, freed memory) almost surely has
   * something else in its first word, so the fast path refuses it without touching it further
   * and the slow path reports MS_ERR_INVALID_ARGUMENT or MS_ERR_DESTROYED. The address binding
   * refuses copies and self-pointing words; the per-process secret, patterns fixed at compile
   * time. */
  uintptr_t cookie;
  struct ms__bump bump[2];  /* indexed by ms_space_t */
  /* Largest block awaiting reuse, by space: requests up to it go where best fit is. At least the
   * largest free block's size (an inline reuse may leave it higher until the next slow path)
   * wherever the window may open; 0 where it never does (shared loaders, checked or counting
   * mode: every request goes out of line there anyway). */
  uint32_t fit_max[2];
  struct ms__free_bins* bins; /* the non-class bins the inline paths may use, or NULL */
};

/* Chosen at random when the first metaspace is created, never changed after (loaders exist only
 * after that); non-zero before. Read by the inline fast path only. */
extern uintptr_t ms__handle_secret;

/* The head a loader handle names: the handle without its tag (MS__HANDLE_TAG_MASK). */
static inline struct ms__loader_head* ms__head_of(ms_loader_t* loader) MS__NOEXCEPT {
  return (struct ms__loader_head*)((uintptr_t)loader & ~MS__HANDLE_TAG_MASK);
}

#ifdef __cplusplus
}
#endif

#endif /* METASPACE_DETAIL_LOADER_HEAD_H */
