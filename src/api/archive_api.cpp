// The C entry points of the class-data archive: the builder (dump time) and the queries over a
// mapped archive. Every function runs behind the exception barrier; a bad handle, slot, name or
// path is an error code, never a crash.
#include <metaspace/metaspace.h>

#include <cstring>

#include "api/builder_handles.hpp"
#include "api/exception_barrier.hpp"
#include "api/metaspace_handle.hpp"
#include "api/struct_size.hpp"
#include "archive/archive_builder.hpp"
#include "common/assert.hpp"
#include "common/error.hpp"
#include "instance/metaspace.hpp"
#include "instance/settings.hpp"

using metaspace::fail;
using metaspace::Metaspace;
using metaspace::api::barrier;
using metaspace::api::barrier_error;
using metaspace::archive::ArchiveBuilder;

namespace {

// The live builder a handle names, or null with the error recorded; nothing is read at a handle
// that names none (api/builder_handles.hpp).
ArchiveBuilder* builder_of(ms_archive_builder_t* handle) {
  namespace handles = metaspace::api::builder_handles;
  switch (handles::state_of(handle)) {
    case handles::HandleState::kLive: {
      auto* b = reinterpret_cast<ArchiveBuilder*>(handle);
      MS_ASSERT(b->valid_handle(), "live archive builder %p without its magic", (void*)handle);
      return b;
    }
    case handles::HandleState::kDiscarded:
      fail(MS_ERR_DESTROYED, "archive builder %p was discarded", (void*)handle);
      return nullptr;
    case handles::HandleState::kUnknown:
      break;
  }
  fail(MS_ERR_INVALID_ARGUMENT, "%p is not an archive builder", (void*)handle);
  return nullptr;
}

}  // namespace

extern "C" {

ms_archive_builder_t* ms_archive_begin(const ms_settings_t* settings,
                                       uintptr_t requested_base) noexcept {
  return barrier("ms_archive_begin", static_cast<ms_archive_builder_t*>(nullptr),
                 [&]() -> ms_archive_builder_t* {
    // The settings the archive will be mapped with, read as ms_create reads them.
    ms_settings_t in = metaspace::default_settings();
    if (settings != nullptr) {
      size_t bytes = 0;
      if (!metaspace::api::caller_struct_bytes("settings", settings->size, sizeof in,
                                               metaspace::api::kSettingsBytesV0_2, &bytes)) {
        return nullptr;
      }
      std::memcpy(&in, settings, bytes);
      in.size = sizeof in;
    }
    ms_settings_t s;
    if (metaspace::complete_settings(in, &s) != MS_OK) return nullptr;
    metaspace::archive::BuilderConfig config;
    config.class_alignment_bytes = s.class_alignment_bytes;
    config.class_space_bytes = s.class_space_bytes;
    config.root_chunk_bytes = s.root_chunk_bytes;
    config.requested_base =
        requested_base != 0 ? requested_base : metaspace::archive::kDefaultRequestedBase;
    std::unique_ptr<ArchiveBuilder> b = ArchiveBuilder::create(config);
    if (b == nullptr) return nullptr;
    metaspace::api::builder_handles::add(b.get());
    return reinterpret_cast<ms_archive_builder_t*>(b.release());
  });
}

void* ms_archive_allocate(ms_archive_builder_t* builder, ms_space_t space, size_t bytes) noexcept {
  return barrier("ms_archive_allocate", static_cast<void*>(nullptr), [&]() -> void* {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->allocate(space, bytes) : nullptr;
  });
}

ms_error_t ms_archive_mark_pointer(ms_archive_builder_t* builder, void* slot) noexcept {
  return barrier_error("ms_archive_mark_pointer", [&] {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->mark_pointer(slot) : ms_last_error();
  });
}

ms_error_t ms_archive_mark_narrow_class(ms_archive_builder_t* builder, void* slot) noexcept {
  return barrier_error("ms_archive_mark_narrow_class", [&] {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->mark_narrow_class(slot) : ms_last_error();
  });
}

uint32_t ms_archive_encode_class(ms_archive_builder_t* builder, const void* klass) noexcept {
  return barrier("ms_archive_encode_class", uint32_t{0}, [&]() -> uint32_t {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->encode_class(klass) : 0;
  });
}

ms_error_t ms_archive_set_root(ms_archive_builder_t* builder, const char* name,
                               const void* block) noexcept {
  return barrier_error("ms_archive_set_root", [&] {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->set_root(name, block) : ms_last_error();
  });
}

ms_error_t ms_archive_write(ms_archive_builder_t* builder, const char* path) noexcept {
  return barrier_error("ms_archive_write", [&] {
    ArchiveBuilder* b = builder_of(builder);
    return b != nullptr ? b->write(path) : ms_last_error();
  });
}

void ms_archive_discard(ms_archive_builder_t* builder) noexcept {
  if (builder == nullptr) return;
  metaspace::api::barrier_void("ms_archive_discard", [&] {
    ArchiveBuilder* b = builder_of(builder);
    // Two threads discarding one builder at once: only the one that took it out deletes it.
    if (b != nullptr && metaspace::api::builder_handles::remove(b)) delete b;
  });
}

void* ms_archive_root(ms_metaspace_t* ms, const char* name) noexcept {
  return barrier("ms_archive_root", static_cast<void*>(nullptr), [&]() -> void* {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return nullptr;
    if (name == nullptr) {
      fail(MS_ERR_INVALID_ARGUMENT, "no name");
      return nullptr;
    }
    const metaspace::archive::ArchiveMapping* a = m->archive();
    void* p = a != nullptr ? a->root(name) : nullptr;
    if (p == nullptr) fail(MS_ERR_INVALID_ARGUMENT, "no archived root named '%s'", name);
    return p;
  });
}

// Hot for a runtime (is this Klass shared?): a range check, nothing that can throw.
int ms_is_archived(const ms_metaspace_t* ms, const void* p) noexcept {
  if (ms == nullptr) return 0;
  return reinterpret_cast<const Metaspace*>(ms)->in_archive(p) ? 1 : 0;
}

ms_error_t ms_archive_status(ms_metaspace_t* ms, const char** reason) noexcept {
  return metaspace::api::barrier_error("ms_archive_status", [&] {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) {
      if (reason != nullptr) *reason = ms == nullptr ? "no metaspace" : "not a live metaspace";
      return ms_last_error();
    }
    return m->archive_status(reason);
  });
}

}  // extern "C"
