// Settings for the tests that run over reclaim policy x class alignment x checked mode.
#pragma once

#include <metaspace/metaspace.h>

#include <cstddef>

namespace metaspace::test {

inline ms_settings_t policy_settings(ms_reclaim_t reclaim, size_t class_alignment, bool checked) {
  ms_settings_t s;
  ms_settings_init(&s);
  s.reclaim = reclaim;
  s.class_alignment_bytes = class_alignment;
  s.checked = checked ? 1 : 0;
  return s;
}

}  // namespace metaspace::test
