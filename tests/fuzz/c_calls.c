/* Calls with enum values out of range, made from C where any int is a valid value of an enum
 * type (in C++ the cast alone would be undefined). The library must refuse them with
 * MS_ERR_INVALID_ARGUMENT. */
#include <metaspace/metaspace.h>

void* msfuzz_allocate_raw(ms_loader_t* loader, int space, size_t bytes) {
  return ms_allocate(loader, (ms_space_t)space, bytes);
}

ms_loader_t* msfuzz_loader_create_raw(ms_metaspace_t* ms, int kind, unsigned flags) {
  return ms_loader_create(ms, (ms_loader_kind_t)kind, flags);
}

ms_metaspace_t* msfuzz_create_raw(const ms_settings_t* settings, int reclaim) {
  ms_settings_t s = *settings;
  s.reclaim = (ms_reclaim_t)reclaim;
  return ms_create(&s);
}
