// The per-process secret that binds a loader handle's cookie to it (metaspace.h,
// ms__loader_head::cookie): the inline fast path serves a handle only if its first word is
// (uintptr_t)handle ^ ms__handle_secret.
#pragma once

#include <metaspace/metaspace.h>

#include <cstdint>

namespace metaspace::api {

// Chooses the secret once, before the first metaspace (and so any loader) exists.
void choose_handle_secret();

inline uintptr_t handle_cookie(const ms_loader_t* handle) {
  return reinterpret_cast<uintptr_t>(handle) ^ ms__handle_secret;
}

}  // namespace metaspace::api
