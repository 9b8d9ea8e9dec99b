// Footprint of micro loaders, one measurement per process so that no allocator sees
// memory another one freed. Built three times: against glibc (also runs the libmetaspace modes),
// mimalloc and jemalloc (both replace malloc process-wide when linked). Prints one JSON object.
//
//   bench_footprint micro N metaspace|malloc   N micro loaders: one 528-byte Klass + 20 small
//       non-class blocks (2 136 bytes live) each. RSS per loader while all live; RSS (and, for
//       libmetaspace, committed + overhead) over live bytes while all live and after 4/5 died in
//       random order (purged).
//   bench_footprint roundtrip N             N micro loaders created, all destroyed, ms_purge:
//       RSS against the start; then ms_destroy: RSS against before ms_create.
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "proc_memory.hpp"

namespace {

// Signed, for the differences below.
long rss_bytes() { return static_cast<long>(proc_memory::resident_bytes()); }

constexpr size_t kKlassBytes = 528;
constexpr size_t kNonClass[20] = {16, 24, 40, 88,  120, 64, 32, 48,  56,  72,
                                  200, 96, 16, 24, 136, 264, 40, 32, 160, 80};
constexpr int kBlocks = 21;

size_t live_per_loader() {
  size_t n = kKlassBytes;
  for (size_t b : kNonClass) n += b;
  return n;
}

std::vector<size_t> death_order(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
  return order;
}

ms_metaspace_t* create_metaspace() {
  ms_settings_t s;
  ms_settings_init(&s);
  s.class_space_bytes = size_t{4} << 30;
  ms_metaspace_t* ms = ms_create(&s);
  if (ms == nullptr) {
    std::fprintf(stderr, "ms_create: %s\n", ms_last_error_text());
    std::exit(1);
  }
  return ms;
}

ms_loader_t* micro_loader(ms_metaspace_t* ms) {
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_MICRO, 0);
  void* k = l == nullptr ? nullptr : ms_allocate(l, MS_SPACE_CLASS, kKlassBytes);
  if (k == nullptr) {
    std::fprintf(stderr, "micro loader: %s\n", ms_last_error_text());
    std::exit(1);
  }
  std::memset(k, 1, kKlassBytes);
  for (size_t b : kNonClass) std::memset(ms_allocate(l, MS_SPACE_NONCLASS, b), 1, b);
  return l;
}

size_t footprint(ms_metaspace_t* ms, size_t* overhead = nullptr) {
  ms_stats_t st;
  ms_get_stats(ms, &st);
  if (overhead != nullptr) *overhead = st.total.overhead_bytes;
  return st.total.committed_bytes;  // chunk memory + overhead (bookkeeping)
}

int micro(size_t n, bool metaspace) {
  std::vector<size_t> order = death_order(n);
  std::vector<ms_loader_t*> loaders(metaspace ? n : 0);
  std::vector<void*> blocks(metaspace ? 0 : n * kBlocks);
  ms_metaspace_t* ms = metaspace ? create_metaspace() : nullptr;
  long start = rss_bytes();
  for (size_t i = 0; i < n; i++) {
    if (metaspace) {
      loaders[i] = micro_loader(ms);
    } else {
      void** b = &blocks[i * kBlocks];
      b[0] = std::malloc(kKlassBytes);
      std::memset(b[0], 1, kKlassBytes);
      for (int k = 0; k < 20; k++) {
        b[k + 1] = std::malloc(kNonClass[k]);
        std::memset(b[k + 1], 1, kNonClass[k]);
      }
    }
  }
  double live = static_cast<double>(n * live_per_loader());
  long all_live = rss_bytes() - start;
  size_t overhead_all_live = 0;
  double fp_all_live = metaspace ? footprint(ms, &overhead_all_live) / live : all_live / live;
  size_t dead = n * 4 / 5;
  for (size_t i = 0; i < dead; i++) {
    size_t j = order[i];
    if (metaspace) {
      ms_loader_destroy(loaders[j]);
    } else {
      for (int k = 0; k < kBlocks; k++) std::free(blocks[j * kBlocks + k]);
    }
  }
  if (metaspace) ms_purge(ms);
  double survivors = static_cast<double>((n - dead) * live_per_loader());
  long after = rss_bytes() - start;
  size_t overhead = 0;
  double fp_after = metaspace ? footprint(ms, &overhead) / survivors : after / survivors;
  std::printf("{\"mode\": \"micro\", \"allocator\": \"%s\", \"loaders\": %zu, "
              "\"live_per_loader\": %zu, \"rss_per_loader\": %.0f, "
              "\"rss_over_live\": %.3f, \"footprint_over_live\": %.3f, "
              "\"overhead_over_live\": %.3f, "
              "\"rss_over_live_after_4of5\": %.3f, \"footprint_over_live_after_4of5\": %.3f, "
              "\"overhead_over_live_after_4of5\": %.3f}\n",
              metaspace ? "metaspace" : METASPACE_BENCH_MALLOC, n, live_per_loader(),
              static_cast<double>(all_live) / static_cast<double>(n), all_live / live, fp_all_live,
              overhead_all_live / live,
              after / survivors, fp_after, overhead / survivors);
  if (metaspace) ms_destroy(ms);
  return 0;
}

int roundtrip(size_t n) {
  std::vector<ms_loader_t*> loaders(n);
  long before_create = rss_bytes();
  ms_metaspace_t* ms = create_metaspace();
  long start = rss_bytes();
  for (size_t i = 0; i < n; i++) loaders[i] = micro_loader(ms);
  long live = rss_bytes();
  for (size_t i = 0; i < n; i++) ms_loader_destroy(loaders[i]);
  ms_purge(ms);
  long purged = rss_bytes();
  size_t fp = footprint(ms);
  ms_destroy(ms);
  long destroyed = rss_bytes();
  std::printf("{\"mode\": \"roundtrip\", \"loaders\": %zu, \"rss_live_above_start\": %ld, "
              "\"rss_purged_above_start\": %ld, \"footprint_purged\": %zu, "
              "\"rss_destroyed_above_before_create\": %ld}\n",
              n, live - start, purged - start, fp, destroyed - before_create);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s micro N metaspace|malloc | roundtrip N\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  size_t n = std::strtoul(argv[2], nullptr, 10);
  if (mode == "micro" && argc == 4) return micro(n, std::string(argv[3]) == "metaspace");
  if (mode == "roundtrip") return roundtrip(n);
  std::fprintf(stderr, "unknown mode\n");
  return 2;
}
