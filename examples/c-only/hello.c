#include <metaspace/metaspace.h>
#include <stdio.h>

int main(void) {
  ms_metaspace_t* ms = ms_create(NULL);                      /* default settings */
  if (ms == NULL) {
    fprintf(stderr, "ms_create: %s\n", ms_last_error_text());
    return 1;
  }
  ms_loader_t* loader = ms_loader_create(ms, MS_LOADER_STANDARD, 0);
  void* klass = ms_allocate(loader, MS_SPACE_CLASS, 600);    /* compressed class space */
  void* method = ms_allocate(loader, MS_SPACE_NONCLASS, 88);
  if (klass == NULL || method == NULL) {
    fprintf(stderr, "ms_allocate: %s\n", ms_last_error_text());
    return 1;
  }
  printf("libmetaspace %s: narrow class pointer %u\n", ms_version(), ms_encode_class(ms, klass));
  ms_loader_destroy(loader);                                 /* every block goes back at once */
  ms_purge(ms);                                              /* free memory goes to the kernel */
  ms_destroy(ms);
  return 0;
}
