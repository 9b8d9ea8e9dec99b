/* A C program that uses libmetaspace the way a C runtime would, linked against the shared
 * library with the C compiler driver and no -lstdc++ (tests/abi/CMakeLists.txt checks the link
 * line and the program's DT_NEEDED entries). Exit status 0 when every step worked. */
#include <metaspace/metaspace.h>

#include <stdio.h>
#include <string.h>

static size_t g_report_bytes;
static void count(void* user, const char* text, size_t length) {
  (void)user;
  (void)text;
  g_report_bytes += length;
}

int main(void) {
  ms_settings_t s;
  ms_settings_init(&s);
  if (ms_settings_parse(&s, "granule=16k,reclaim=aggressive") != MS_OK) return 1;
  ms_metaspace_t* ms = ms_create(&s);
  if (ms == NULL) return 2;
  ms_loader_t* l = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  if (l == NULL) return 3;
  void* k = ms_allocate(l, MS_SPACE_CLASS, 600); /* the inline fast path */
  void* m = ms_alloc(l, MS_SPACE_NONCLASS, 88);  /* the exported call */
  if (k == NULL || m == NULL || !ms_is_class_space(ms, k)) return 4;
  if (ms_deallocate(l, m, 88) != MS_OK) return 5;
  ms_stats_t st;
  if (ms_get_stats(ms, &st) != MS_OK || st.loaders != 1 || st.commit_granule_bytes != 16384) return 6;
  if (ms_print_report_cb(ms, count, NULL, NULL) != MS_OK || g_report_bytes < 500) return 7;
  if (ms_loader_destroy(l) != MS_OK || ms_verify(ms) != MS_OK) return 8;
  /* A bad call is an error code, never a crash or an abort. */
  if (ms_allocate((ms_loader_t*)ms, MS_SPACE_NONCLASS, 16) != NULL ||
      ms_last_error() != MS_ERR_INVALID_ARGUMENT) return 9;
  if (strcmp(ms_version(), "0.2.0") != 0 && MS_VERSION_MINOR == 2) return 10;
  ms_destroy(ms);
  printf("c_caller: ok, libmetaspace %s\n", ms_version());
  return 0;
}
