/* A runtime in miniature: 200 loaders load classes, 4 of 5 die, memory goes back to the OS.
 * Prints committed memory and the process RSS before and after. */
#include <metaspace/metaspace.h>

#include <stdio.h>
#include <string.h>

static long rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  if (f != NULL) fclose(f);
  return kib;
}

static void report(ms_metaspace_t* ms, const char* when) {
  ms_stats_t s;
  if (ms_get_stats(ms, &s) != MS_OK) return;
  printf("%-22s loaders %4zu  used %8.2f MiB  committed %8.2f MiB  RSS %8.2f MiB\n", when,
         s.loaders, s.total.used_bytes / 1048576.0, s.total.committed_bytes / 1048576.0,
         rss_kib() / 1024.0);
}

int main(void) {
  enum { LOADERS = 200, CLASSES = 200, BLOCKS = 40 };
  static ms_loader_t* loaders[LOADERS];
  ms_metaspace_t* ms = ms_create(NULL);
  if (ms == NULL) {
    fprintf(stderr, "ms_create: %s\n", ms_last_error_text());
    return 1;
  }
  report(ms, "start");
  for (int l = 0; l < LOADERS; l++) loaders[l] = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  /* Round-robin loading interleaves the loaders' chunks in memory: the hard case. */
  for (int c = 0; c < CLASSES; c++) {
    for (int l = 0; l < LOADERS; l++) {
      void* klass = ms_allocate(loaders[l], MS_SPACE_CLASS, 576 + (c % 7) * 64);
      if (klass == NULL) {
        fprintf(stderr, "allocate: %s\n", ms_last_error_text());
        return 1;
      }
      memset(klass, 0xAB, 576);
      for (int b = 0; b < BLOCKS; b++) {
        size_t bytes = 16 + (size_t)((b * 37 + c) % 12) * 8;
        memset(ms_allocate(loaders[l], MS_SPACE_NONCLASS, bytes), 0xCD, bytes);
      }
    }
  }
  report(ms, "all loaded");
  for (int l = 0; l < LOADERS; l++) {
    if (l % 5 != 0) ms_loader_destroy(loaders[l]);
  }
  ms_purge(ms);
  report(ms, "4/5 unloaded + purge");
  if (ms_verify(ms) != MS_OK) {
    fprintf(stderr, "verify: %s\n", ms_last_error_text());
    return 1;
  }
  ms_destroy(ms);
  return 0;
}
