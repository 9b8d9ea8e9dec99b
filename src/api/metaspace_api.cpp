// The C API: handle checks and translation onto the Metaspace and LoaderMetaspace objects.
// Nothing here holds state; every function either forwards or refuses with an error, and every
// one runs behind the exception barrier (exception_barrier.hpp).
#include <metaspace/metaspace.h>

#include <algorithm>
#include <cstring>

#include "api/exception_barrier.hpp"
#include "api/exit_report.hpp"
#include "api/fork_handlers.hpp"
#include "api/metaspace_handle.hpp"
#include "api/struct_size.hpp"
#include "common/error.hpp"
#include "instance/live_metaspaces.hpp"
#include "instance/metaspace.hpp"
#include "instance/settings.hpp"
#include "os/fork_gate.hpp"
#include "os/thread_records.hpp"

using metaspace::fail;
using metaspace::LoaderMetaspace;
using metaspace::Metaspace;
using metaspace::api::barrier;
using metaspace::api::barrier_error;
using metaspace::api::barrier_void;

// The header's macros pass the caller's struct sizes; here the functions of those names.
#undef ms_get_stats
#undef ms_loader_get_stats
#undef ms_settings_init

namespace {

const Metaspace* from_handle(const ms_metaspace_t* ms) {
  return reinterpret_cast<const Metaspace*>(ms);
}

// Whether the object carries the handle: its loader is alive and this is its handle
// (loader_registry.hpp).
bool carries(const LoaderMetaspace* l, const ms_loader_t* loader) {
  return metaspace::carries(l, reinterpret_cast<uintptr_t>(loader));
}

// The metaspace whose loader objects' range holds the object, or null (not a loader handle).
Metaspace* metaspace_holding(const LoaderMetaspace* object) {
  return object != nullptr ? metaspace::live_metaspaces::holding_loader_address(object) : nullptr;
}

// The live loader a handle names, or null with the error set. The object a handle names
// carries it (its cookie) only while that loader lives: the object is reused as soon as the
// loader dies, under another handle (dead_handles.hpp). So a handle whose object does not carry
// it is refused: MS_ERR_DESTROYED if it is one of its metaspace's dead handles, else
// MS_ERR_INVALID_ARGUMENT. Read: the handle's first word and, if that matches, the magic word
// (by the contract nothing destroys the loader meanwhile).
LoaderMetaspace* loader_of(ms_loader_t* loader) {
  uintptr_t handle = reinterpret_cast<uintptr_t>(loader);
  LoaderMetaspace* l = LoaderMetaspace::object_of(handle);
  if (l != nullptr && carries(l, loader) && l->valid_handle()) return l;
  Metaspace* ms = metaspace_holding(l);
  if (ms != nullptr) {
    ms->loaders().refuse(handle);
  } else {
    fail(MS_ERR_INVALID_ARGUMENT, "%p is not a loader handle", (void*)loader);
  }
  return nullptr;
}

ms_loader_t* to_handle(LoaderMetaspace* l) { return reinterpret_cast<ms_loader_t*>(l->handle()); }

// The settings a caller passed, over the defaults for fields its header did not have.
bool read_settings(const ms_settings_t* in, ms_settings_t* out) {
  *out = metaspace::default_settings();
  if (in == nullptr) return true;
  size_t bytes = 0;
  if (!metaspace::api::caller_struct_bytes("settings", in->size, sizeof(ms_settings_t),
                                           metaspace::api::kSettingsBytesV0_2, &bytes)) {
    return false;
  }
  std::memcpy(out, in, bytes);
  out->size = sizeof(ms_settings_t);
  if (out->report_at_exit < MS_REPORT_NONE || out->report_at_exit > MS_REPORT_JSON) {
    fail(MS_ERR_INVALID_ARGUMENT, "report_at_exit %d: must be MS_REPORT_NONE (0), "
         "MS_REPORT_TEXT (1) or MS_REPORT_JSON (2)", out->report_at_exit);
    return false;
  }
  if (out->verbose != 0 && out->verbose != 1) {
    fail(MS_ERR_INVALID_ARGUMENT, "verbose %d: must be 0 or 1", out->verbose);
    return false;
  }
  return true;
}

}  // namespace

extern "C" {

ms_error_t ms_settings_init_sized(ms_settings_t* settings, size_t size) noexcept {
  return barrier_error("ms_settings_init", [&] {
    return metaspace::api::init_sized("settings", settings, size, metaspace::default_settings(),
                                      metaspace::api::kSettingsBytesV0_2);
  });
}

void ms_settings_init(ms_settings_t* settings) noexcept {
  ms_settings_init_sized(settings, metaspace::api::kSettingsBytesV0_2);
}

ms_metaspace_t* ms_create(const ms_settings_t* settings) noexcept {
  return barrier("ms_create", static_cast<ms_metaspace_t*>(nullptr), [&]() -> ms_metaspace_t* {
    metaspace::clear_error();
    ms_settings_t s;
    if (!read_settings(settings, &s)) return nullptr;
    metaspace::choose_handle_secret();
    metaspace::api::install_fork_handlers();
    std::unique_ptr<Metaspace> ms = Metaspace::create(s);
    if (!ms) return nullptr;
    metaspace::api::on_create(ms->handle(), s);
    return ms.release()->handle();
  });
}

void ms_destroy(ms_metaspace_t* ms) noexcept {
  if (ms == nullptr) return;
  barrier_void("ms_destroy", [&] {
    // A second ms_destroy, or a pointer that is no metaspace: nothing happens but the error.
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return;
    // The report at exit reads it while it is live. Then it leaves the live ones (later calls get
    // MS_ERR_DESTROYED), the calls other threads have in flight on it (a monitor's ms_get_usage)
    // finish, and it goes.
    metaspace::api::on_destroy(ms);
    if (!metaspace::live_metaspaces::retire(m, &call.call())) return;
    delete m;
  });
}

ms_loader_t* ms_loader_create(ms_metaspace_t* ms, ms_loader_kind_t kind, unsigned flags) noexcept {
  return barrier("ms_loader_create", static_cast<ms_loader_t*>(nullptr), [&]() -> ms_loader_t* {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return nullptr;
    LoaderMetaspace* l = m->loaders().create(kind, flags);
    return l != nullptr ? to_handle(l) : nullptr;
  });
}

ms_error_t ms_loader_destroy(ms_loader_t* loader) noexcept {
  return barrier_error("ms_loader_destroy", [&] {
    LoaderMetaspace* l = loader_of(loader);
    if (l == nullptr) return ms_last_error();
    return reinterpret_cast<Metaspace*>(l->owner())->loaders().destroy(l);
  });
}

}  // extern "C"

namespace {

// Whether a metaspace handle still names a live metaspace: after a GC callback, which may have
// destroyed it. A handle never names a newer metaspace, so a live one is the same.
bool still_live(ms_metaspace_t* ms) {
  return metaspace::live_metaspaces::state_of(ms) == metaspace::live_metaspaces::HandleState::kLive;
}

// Out of line, so that ms_allocate_slow's window path needs no stack frame.
//
// A commit refused by the cap (or a crossed threshold) is reported to the runtime here, outside
// every lock, before the block or the refusal is returned; its GC may have made room, so a
// refused request is tried once more. The callback may also destroy the very loader that is
// allocating (a runtime unloading it by mistake): its object is then reused at once, perhaps by
// a loader the callback created. So after the callback the loader's object is read only through
// the handle check (its cookie), never locked or written: a loader destroyed meanwhile gets
// MS_ERR_DESTROYED, and a block it had been given is gone with it.
[[gnu::noinline]] void* allocate_checked(ms_loader_t* loader, ms_space_t space,
                                         size_t bytes) noexcept {
  return barrier("ms_allocate", static_cast<void*>(nullptr), [&]() -> void* {
    LoaderMetaspace* l = loader_of(loader);
    if (l == nullptr) return nullptr;
    ms_metaspace_t* owner = l->owner();
    metaspace::CommitLimiter& limiter = reinterpret_cast<Metaspace*>(owner)->limiter();
    void* p = l->allocate(space, bytes);
    for (bool retried = false;; retried = true) {
      switch (limiter.deliver_threshold_event(owner, still_live)) {
        case metaspace::CommitLimiter::Delivery::kNone:
          return p;
        case metaspace::CommitLimiter::Delivery::kOwnerDestroyed:
          // The loader's objects went with the metaspace: nothing of either is read.
          fail(MS_ERR_DESTROYED, "the metaspace of loader %p was destroyed by the GC callback "
               "during this allocation", static_cast<void*>(loader));
          return nullptr;
        case metaspace::CommitLimiter::Delivery::kDelivered:
          break;
      }
      if (!carries(l, loader)) {
        fail(MS_ERR_DESTROYED, "loader %p was destroyed by the GC callback during this "
             "allocation", static_cast<void*>(loader));
        return nullptr;
      }
      if (p != nullptr || retried || ms_last_error() != MS_ERR_LIMIT) return p;
      p = l->allocate(space, bytes);
    }
  });
}

// A Klass of a live loader (its cookie matched): one freed earlier of exactly this size, popped
// off the class arena's bins without the lock for the owner of a loader that is not shared
// (LoaderMetaspace::reuse_klass_without_lock), before the barrier and the second handle check
// (~150 instructions per Klass behind them, callgrind); else the full call. The pop runs inside
// the fork gate: a fork copies no half-done pop, and a child finds no bin marked busy by a
// thread it does not have (Fork.AChildOfAProcessWhoseThreadsAreInsideTheLibraryCanUseIt hung in 1
// of 30 children without it). Only a thread that has its record already enters it here (taking
// one may lock and allocate, which the barrier's path does).
[[gnu::noinline]] void* allocate_klass(ms_loader_t* loader, LoaderMetaspace* head,
                                       size_t bytes) noexcept {
  if (metaspace::t_thread_record != nullptr) {
    metaspace::os::InsideLibrary inside;
    if (void* p = head->reuse_klass_without_lock(bytes)) return p;
  }
  return allocate_checked(loader, MS_SPACE_CLASS, bytes);
}

}  // namespace

extern "C" {

void* ms_allocate_slow(ms_loader_t* loader, ms_space_t space, size_t bytes) noexcept {
  // A shared loader's window first, before the barrier and the handle checks: most of its blocks
  // end here. The cookie says the loader is alive (the inline path reads it too), so its object
  // may be read. A Klass request goes on to a pop (allocate_klass), out of line like everything
  // else here, so that the window path needs no stack frame (with the pop inline, every call
  // here pushed and popped four registers and made a frame).
  LoaderMetaspace* head = LoaderMetaspace::object_of(reinterpret_cast<uintptr_t>(loader));
  if (loader != nullptr && carries(head, loader)) {
    if (void* p = head->allocate_in_window(space, bytes)) return p;
    if (space == MS_SPACE_CLASS) return allocate_klass(loader, head, bytes);
  }
  return allocate_checked(loader, space, bytes);
}

// The inline path, compiled here: for FFI callers and compilers without GNU builtins.
void* ms_alloc(ms_loader_t* loader, ms_space_t space, size_t bytes) noexcept {
  return ms_allocate(loader, space, bytes);
}

// The exported function (FFI callers, and the inline ms_deallocate when it cannot push the block
// itself); the parentheses keep the header's macro of the same name out.
ms_error_t (ms_deallocate)(ms_loader_t* loader, void* p, size_t bytes) noexcept {
  // A Klass of the class arena's current chunk first, as ms_allocate_slow reuses one: before
  // the barrier and the handle checks (the cookie says the loader is alive), inside the fork gate
  // (as there).
  LoaderMetaspace* head = LoaderMetaspace::object_of(reinterpret_cast<uintptr_t>(loader));
  if (loader != nullptr && metaspace::t_thread_record != nullptr && carries(head, loader)) {
    metaspace::os::InsideLibrary inside;
    if (head->free_klass_without_lock(p, bytes)) return MS_OK;
  }
  return barrier_error("ms_deallocate", [&] {
    LoaderMetaspace* l = loader_of(loader);
    if (l == nullptr) return ms_last_error();
    // Archived blocks are never freed (they are the file's pages): ignored, counted.
    auto* archive = reinterpret_cast<Metaspace*>(l->owner())->archive();
    if (archive != nullptr && archive->contains(p)) {
      archive->count_ignored_deallocation();
      return MS_OK;
    }
    return l->deallocate(p, bytes);
  });
}

void ms_purge(ms_metaspace_t* ms) noexcept {
  if (ms == nullptr) return;
  barrier_void("ms_purge", [&] {
    metaspace::api::MetaspaceCall call(ms);
    if (Metaspace* m = call.get()) m->purge();
  });
}

// The narrow class pointer functions are the runtime's hot path: no handle check, nothing that
// can throw (plain arithmetic on the class space's fixed range).
uint32_t ms_encode_class(const ms_metaspace_t* ms, const void* p) noexcept {
  return from_handle(ms)->class_space().encode(p);
}

void* ms_decode_class(const ms_metaspace_t* ms, uint32_t narrow) noexcept {
  return from_handle(ms)->class_space().decode(narrow);
}

uintptr_t ms_class_space_base(const ms_metaspace_t* ms) noexcept {
  return from_handle(ms)->class_space().encoding_base();
}

unsigned ms_class_shift(const ms_metaspace_t* ms) noexcept {
  return from_handle(ms)->class_space().shift();
}

unsigned ms_narrow_class_bits(const ms_metaspace_t* ms) noexcept {
  return from_handle(ms)->class_space().narrow_bits();
}

int ms_is_class_space(const ms_metaspace_t* ms, const void* p) noexcept {
  return from_handle(ms)->class_space().contains(p) ? 1 : 0;
}

int ms_contains(const ms_metaspace_t* ms, const void* p) noexcept {
  if (ms == nullptr) return 0;
  const Metaspace* m = from_handle(ms);
  return m->class_space().contains(p) || m->in_archive(p) || m->nonclass_contains(p) ? 1 : 0;
}

void ms_set_gc_threshold(ms_metaspace_t* ms, size_t bytes, ms_gc_callback_t cb,
                         void* user) noexcept {
  if (ms == nullptr) return;
  barrier_void("ms_set_gc_threshold", [&] {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return;
    m->limiter().set_threshold(bytes, cb, user);
    // The callback may destroy the metaspace (the limiter is then not touched after it).
    call.call().allow_destroy_within(true);
    m->limiter().deliver_threshold_event(ms, still_live);
  });
}

size_t ms_gc_done(ms_metaspace_t* ms) noexcept {
  size_t threshold = 0;
  barrier_void("ms_gc_done", [&] {
    metaspace::api::MetaspaceCall call(ms);
    if (Metaspace* m = call.get()) threshold = m->limiter().gc_done();
  });
  return threshold;
}

ms_error_t ms_get_usage(ms_metaspace_t* ms, ms_usage_t* usage) noexcept {
  return barrier_error("ms_get_usage", [&] {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return ms_last_error();
    if (usage == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no output");
    size_t size = usage->size;
    if (size < sizeof(size_t) + sizeof(ms_space_usage_t)) {
      return fail(MS_ERR_INVALID_ARGUMENT,
                  "ms_usage_t.size is %zu; set it to sizeof(ms_usage_t)", size);
    }
    ms_usage_t u;
    m->usage(&u);
    // A caller built against a shorter (older) struct gets the fields it knows, no more.
    size_t n = size < sizeof u ? size : sizeof u;
    std::memcpy(reinterpret_cast<char*>(usage) + sizeof(size_t),
                reinterpret_cast<const char*>(&u) + sizeof(size_t), n - sizeof(size_t));
    usage->size = n;
    return MS_OK;
  });
}

ms_error_t ms_get_stats_sized(ms_metaspace_t* ms, ms_stats_t* out, size_t out_size) noexcept {
  return barrier_error("ms_get_stats", [&] {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return ms_last_error();
    if (out == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no output");
    size_t bytes = 0;
    if (!metaspace::api::caller_struct_bytes("stats", out_size, sizeof(ms_stats_t),
                                             metaspace::api::kStatsBytesV0_2, &bytes)) {
      return ms_last_error();
    }
    ms_stats_t totals = m->snapshot({.loaders = false}).totals;
    std::memcpy(out, &totals, bytes);
    return MS_OK;
  });
}

ms_error_t ms_get_stats(ms_metaspace_t* ms, ms_stats_t* out) noexcept {
  return ms_get_stats_sized(ms, out, metaspace::api::kStatsBytesV0_2);
}

ms_error_t ms_loader_get_stats_sized(ms_loader_t* loader, ms_loader_stats_t* out,
                                     size_t out_size) noexcept {
  return barrier_error("ms_loader_get_stats", [&] {
    // Not loader_of(): statistics may race with the loader's destruction (docs/threads.md), so
    // the handle is checked under its metaspace's registry lock, which a destruction takes.
    uintptr_t handle = reinterpret_cast<uintptr_t>(loader);
    Metaspace* ms = metaspace_holding(LoaderMetaspace::object_of(handle));
    if (ms == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "%p is not a loader handle", (void*)loader);
    if (out == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no output");
    size_t bytes = 0;
    if (!metaspace::api::caller_struct_bytes("loader stats", out_size, sizeof(ms_loader_stats_t),
                                             metaspace::api::kLoaderStatsBytesV0_2, &bytes)) {
      return ms_last_error();
    }
    metaspace::LoaderStats s;
    if (ms_error_t e = ms->loader_stats(handle, &s); e != MS_OK) return e;
    ms_loader_stats_t result{};
    result.kind = s.kind;
    result.allocations = s.allocations;
    result.allocations_counted = s.allocations_counted ? 1 : 0;
    for (int sp = 0; sp < 2; sp++) {
      result.used_bytes[sp] = s.used_bytes[sp];
      result.committed_bytes[sp] = s.arena[sp].committed_bytes;
      result.capacity_bytes[sp] = s.arena[sp].capacity_bytes;
      result.free_blocks_bytes[sp] = s.free_blocks_bytes[sp];
      result.free_blocks_count[sp] = s.arena[sp].free_blocks_count;
      result.chunks[sp] = s.arena[sp].chunks;
      for (int level = 0; level < MS_MAX_CHUNK_LEVELS; level++) {
        result.chunks_by_level[sp][level] = s.arena[sp].chunks_by_level[level];
      }
    }
    std::memcpy(out, &result, bytes);
    return MS_OK;
  });
}

ms_error_t ms_loader_get_stats(ms_loader_t* loader, ms_loader_stats_t* out) noexcept {
  return ms_loader_get_stats_sized(loader, out, metaspace::api::kLoaderStatsBytesV0_2);
}

ms_error_t ms_verify(ms_metaspace_t* ms) noexcept {
  return barrier_error("ms_verify", [&] {
    metaspace::api::MetaspaceCall call(ms);
    Metaspace* m = call.get();
    if (m == nullptr) return ms_last_error();
    return m->verify();
  });
}

}  // extern "C"
