// The C API: handle checks and translation onto the Metaspace and LoaderMetaspace objects.
// Nothing here holds state; every function either forwards or refuses with an error.
#include <metaspace/metaspace.h>

#include <cstring>

#include "common/error.hpp"
#include "instance/metaspace.hpp"
#include "instance/settings.hpp"

using metaspace::fail;
using metaspace::LoaderMetaspace;
using metaspace::Metaspace;

namespace {

Metaspace* from_handle(ms_metaspace_t* ms) { return reinterpret_cast<Metaspace*>(ms); }
const Metaspace* from_handle(const ms_metaspace_t* ms) {
  return reinterpret_cast<const Metaspace*>(ms);
}

// The loader object, or null with the error set: a NULL or foreign handle is refused here.
LoaderMetaspace* loader_of(ms_loader_t* loader) {
  auto* l = static_cast<LoaderMetaspace*>(reinterpret_cast<ms__loader_head*>(loader));
  if (l == nullptr || !l->valid_handle()) {
    fail(MS_ERR_INVALID_ARGUMENT, "%p is not a loader handle", (void*)loader);
    return nullptr;
  }
  return l;
}

ms_loader_t* to_handle(LoaderMetaspace* l) {
  return reinterpret_cast<ms_loader_t*>(static_cast<ms__loader_head*>(l));
}

}  // namespace

extern "C" {

void ms_settings_init(ms_settings_t* settings) {
  if (settings != nullptr) *settings = metaspace::default_settings();
}

ms_metaspace_t* ms_create(const ms_settings_t* settings) {
  metaspace::clear_error();
  ms_settings_t s = settings != nullptr ? *settings : metaspace::default_settings();
  std::unique_ptr<Metaspace> ms = Metaspace::create(s);
  return ms ? ms.release()->handle() : nullptr;
}

void ms_destroy(ms_metaspace_t* ms) { delete from_handle(ms); }

ms_loader_t* ms_loader_create(ms_metaspace_t* ms, ms_loader_kind_t kind, unsigned flags) {
  if (ms == nullptr) {
    fail(MS_ERR_INVALID_ARGUMENT, "no metaspace");
    return nullptr;
  }
  LoaderMetaspace* l = from_handle(ms)->create_loader(kind, flags);
  return l != nullptr ? to_handle(l) : nullptr;
}

ms_error_t ms_loader_destroy(ms_loader_t* loader) {
  LoaderMetaspace* l = loader_of(loader);
  if (l == nullptr) return ms_last_error();
  return reinterpret_cast<Metaspace*>(l->owner())->destroy_loader(l);
}

void* ms_allocate_slow(ms_loader_t* loader, ms_space_t space, size_t bytes) {
  LoaderMetaspace* l = loader_of(loader);
  return l != nullptr ? l->allocate(space, bytes) : nullptr;
}

ms_error_t ms_deallocate(ms_loader_t* loader, void* p, size_t bytes) {
  LoaderMetaspace* l = loader_of(loader);
  return l != nullptr ? l->deallocate(p, bytes) : ms_last_error();
}

void ms_purge(ms_metaspace_t* ms) {
  if (ms != nullptr) from_handle(ms)->purge();
}

uint32_t ms_encode_class(const ms_metaspace_t* ms, const void* p) {
  return from_handle(ms)->class_space().encode(p);
}

void* ms_decode_class(const ms_metaspace_t* ms, uint32_t narrow) {
  return from_handle(ms)->class_space().decode(narrow);
}

uintptr_t ms_class_space_base(const ms_metaspace_t* ms) {
  return from_handle(ms)->class_space().base();
}

unsigned ms_class_shift(const ms_metaspace_t* ms) {
  return from_handle(ms)->class_space().shift();
}

unsigned ms_narrow_class_bits(const ms_metaspace_t* ms) {
  return from_handle(ms)->class_space().narrow_bits();
}

int ms_is_class_space(const ms_metaspace_t* ms, const void* p) {
  return from_handle(ms)->class_space().contains(p) ? 1 : 0;
}

void ms_set_gc_threshold(ms_metaspace_t* ms, size_t bytes, ms_gc_callback_t cb, void* user) {
  if (ms == nullptr) return;
  from_handle(ms)->limiter().set_threshold(bytes, cb, user);
  from_handle(ms)->limiter().deliver_threshold_event(ms);
}

size_t ms_gc_done(ms_metaspace_t* ms) {
  if (ms == nullptr) {
    fail(MS_ERR_INVALID_ARGUMENT, "no metaspace");
    return 0;
  }
  return from_handle(ms)->limiter().gc_done();
}

ms_error_t ms_get_stats(ms_metaspace_t* ms, ms_stats_t* out) {
  if (ms == nullptr || out == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no metaspace/out");
  *out = from_handle(ms)->snapshot({.loaders = false}).totals;
  return MS_OK;
}

ms_error_t ms_get_usage(ms_metaspace_t* ms, ms_usage_t* usage) {
  if (ms == nullptr || usage == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no metaspace/out");
  size_t size = usage->size;
  if (size < sizeof(size_t) + sizeof(ms_space_usage_t)) {
    return fail(MS_ERR_INVALID_ARGUMENT, "ms_usage_t.size is %zu; set it to sizeof(ms_usage_t)",
                size);
  }
  ms_usage_t u;
  from_handle(ms)->usage(&u);
  // A caller built against a shorter (older) struct gets the fields it knows, no more.
  size_t n = size < sizeof u ? size : sizeof u;
  std::memcpy(reinterpret_cast<char*>(usage) + sizeof(size_t),
              reinterpret_cast<const char*>(&u) + sizeof(size_t), n - sizeof(size_t));
  usage->size = n;
  return MS_OK;
}

ms_error_t ms_loader_get_stats(ms_loader_t* loader, ms_loader_stats_t* out) {
  LoaderMetaspace* l = loader_of(loader);
  if (l == nullptr) return ms_last_error();
  if (out == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no output");
  metaspace::LoaderStats s = l->stats();
  if (s.destroyed) return fail(MS_ERR_DESTROYED, "statistics of a destroyed loader");
  *out = ms_loader_stats_t{};
  out->kind = s.kind;
  out->allocations = s.allocations;
  for (int sp = 0; sp < 2; sp++) {
    out->used_bytes[sp] = s.used_bytes[sp];
    out->committed_bytes[sp] = s.arena[sp].committed_bytes;
    out->capacity_bytes[sp] = s.arena[sp].capacity_bytes;
    out->free_blocks_bytes[sp] = s.free_blocks_bytes[sp];
    out->free_blocks_count[sp] = s.arena[sp].free_blocks_count;
    out->chunks[sp] = s.arena[sp].chunks;
    for (int l = 0; l < MS_MAX_CHUNK_LEVELS; l++) {
      out->chunks_by_level[sp][l] = s.arena[sp].chunks_by_level[l];
    }
  }
  return MS_OK;
}

ms_error_t ms_verify(ms_metaspace_t* ms) {
  if (ms == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no metaspace");
  return from_handle(ms)->verify();
}

}  // extern "C"
