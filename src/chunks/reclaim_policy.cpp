#include "chunks/reclaim_policy.hpp"

namespace metaspace {

const char* reclaim_name(ms_reclaim_t kind) {
  switch (kind) {
    case MS_RECLAIM_NONE: return "none";
    case MS_RECLAIM_BALANCED: return "balanced";
    case MS_RECLAIM_AGGRESSIVE: return "aggressive";
  }
  return "?";
}

}  // namespace metaspace
