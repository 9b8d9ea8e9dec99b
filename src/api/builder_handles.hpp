// The archive builders of the process: whether a builder handle names one.
//
// A builder handle is its object's address. The object's storage comes from os/unique_addresses,
// so no builder is ever placed where one was: a discarded builder's handle never names a newer
// builder. A handle is looked up here before anything is read at it (a discarded builder's pages
// are gone): a live builder's handle is found, one of the last 64 discarded gets
// MS_ERR_DESTROYED, anything else MS_ERR_INVALID_ARGUMENT. Builders are a dump-time tool: a
// short scan under one lock.
#pragma once

#include <cstddef>

namespace metaspace::api::builder_handles {

inline constexpr size_t kRememberedDiscarded = 64;

void add(const void* builder);
// Remembers it among the last kRememberedDiscarded; false if it was not live (nothing changed).
bool remove(const void* builder);

enum class HandleState { kLive, kDiscarded, kUnknown };
HandleState state_of(const void* handle);

}  // namespace metaspace::api::builder_handles
