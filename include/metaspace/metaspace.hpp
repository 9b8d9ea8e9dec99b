// Thin C++ API over metaspace.h: RAII owners for a metaspace and its loaders, errors as
// exceptions where construction fails. Allocation stays the inline C fast path.
//
// Lifetimes: a Loader shares ownership of its metaspace, so a Loader that outlives the
// Metaspace object it came from keeps the C metaspace alive (ms_destroy runs when the last of
// them goes); destroying loaders after their metaspace is never a use of freed memory. Every
// type is movable; a moved-from object is empty and may only be destroyed or assigned to.
//
// Needs C++14 or later. C++11 (and C, C11 or later) code uses the C API in metaspace.h directly.
#pragma once

#if defined(__cplusplus) && __cplusplus < 201402L
// Everything below is left out, so that the compiler stops at this line rather than at a C++14
// library call further down.
#error "metaspace.hpp needs C++14 or later (-std=c++14); C++11 code can include metaspace.h, the C API"
#else

#include <metaspace/metaspace.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace ms {

class Error : public std::runtime_error {
 public:
  explicit Error(ms_error_t code) : std::runtime_error(ms_last_error_text()), code_(code) {}
  ms_error_t code() const noexcept { return code_; }

 private:
  ms_error_t code_;
};

class Settings {
 public:
  Settings() noexcept { ms_settings_init(&s_); }
  Settings& reclaim(ms_reclaim_t r) noexcept { s_.reclaim = r; return *this; }
  Settings& commit_granule(size_t bytes) noexcept { s_.commit_granule_bytes = bytes; return *this; }
  Settings& root_chunk(size_t bytes) noexcept { s_.root_chunk_bytes = bytes; return *this; }
  Settings& node_size(size_t bytes) noexcept { s_.node_bytes = bytes; return *this; }
  Settings& class_space(size_t bytes, uintptr_t base = 0) noexcept {
    s_.class_space_bytes = bytes;
    s_.class_space_base = base;
    return *this;
  }
  Settings& class_alignment(size_t bytes) noexcept { s_.class_alignment_bytes = bytes; return *this; }
  Settings& max_committed(size_t bytes) noexcept { s_.max_committed_bytes = bytes; return *this; }
  Settings& gc_threshold(size_t bytes, ms_gc_callback_t cb, void* user) noexcept {
    s_.gc_threshold_bytes = bytes;
    s_.gc_callback = cb;
    s_.gc_callback_user = user;
    return *this;
  }
  Settings& checked(bool on) noexcept { s_.checked = on ? 1 : 0; return *this; }
  // Per-loader allocation counts (Loader::stats().allocations); closes the inline fast path.
  Settings& count_allocations(bool on) noexcept { s_.count_allocations = on ? 1 : 0; return *this; }
  // A class-data archive to map (docs/archive.md); `path` must live until the Metaspace exists.
  Settings& archive(const char* path, int policy = MS_ARCHIVE_AUTO, bool verify = true) noexcept {
    s_.archive_path = path;
    s_.archive_policy = policy;
    s_.archive_verify = verify ? 1 : 0;
    return *this;
  }
  // METASPACE_OPTIONS-style text ("granule=16k,reclaim=aggressive"); throws Error if refused.
  Settings& options(const char* text) {
    ms_error_t e = ms_settings_parse(&s_, text);
    if (e != MS_OK) throw Error(e);
    return *this;
  }
  // The METASPACE_OPTIONS environment variable; throws Error if refused.
  Settings& from_env() {
    ms_error_t e = ms_settings_from_env(&s_);
    if (e != MS_OK) throw Error(e);
    return *this;
  }
  const ms_settings_t& c() const noexcept { return s_; }

 private:
  ms_settings_t s_;
};

namespace detail {
struct DestroyMetaspace {
  void operator()(ms_metaspace_t* ms) const noexcept { ms_destroy(ms); }
};
using SharedMetaspace = std::shared_ptr<ms_metaspace_t>;
}  // namespace detail

class Loader {
 public:
  Loader() noexcept = default;
  // Throws Error if the loader cannot be created.
  Loader(detail::SharedMetaspace owner, ms_loader_kind_t kind, unsigned flags = 0)
      : owner_(std::move(owner)), l_(ms_loader_create(owner_.get(), kind, flags)) {
    if (l_ == nullptr) {
      owner_.reset();
      throw Error(ms_last_error());
    }
  }
  ~Loader() { reset(); }
  Loader(Loader&& o) noexcept : owner_(std::move(o.owner_)), l_(std::exchange(o.l_, nullptr)) {}
  Loader& operator=(Loader&& o) noexcept {
    if (this != &o) {
      reset();
      owner_ = std::move(o.owner_);
      l_ = std::exchange(o.l_, nullptr);
    }
    return *this;
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Null on failure (ms_last_error() says why): allocation failure is an expected event.
  void* allocate(ms_space_t space, size_t bytes) noexcept { return ms_allocate(l_, space, bytes); }
  void* allocate_class(size_t bytes) noexcept { return ms_allocate(l_, MS_SPACE_CLASS, bytes); }
  ms_error_t deallocate(void* p, size_t bytes) noexcept { return ms_deallocate(l_, p, bytes); }
  ms_loader_stats_t stats() const {
    ms_loader_stats_t s{};
    if (ms_loader_get_stats(l_, &s) != MS_OK) throw Error(ms_last_error());
    return s;
  }
  // Destroys the loader (its memory goes back at once); the metaspace is released too if this
  // was the last owner.
  void reset() noexcept {
    if (l_ != nullptr) ms_loader_destroy(std::exchange(l_, nullptr));
    owner_.reset();
  }
  ms_loader_t* get() const noexcept { return l_; }
  explicit operator bool() const noexcept { return l_ != nullptr; }

 private:
  detail::SharedMetaspace owner_;  // declared first: destroyed after the loader
  ms_loader_t* l_ = nullptr;
};

class Metaspace {
 public:
  // Throws Error if the settings are refused or memory cannot be reserved.
  explicit Metaspace(const Settings& settings = Settings()) : ms_(create(settings)) {}
  Metaspace(Metaspace&&) noexcept = default;
  Metaspace& operator=(Metaspace&&) noexcept = default;
  Metaspace(const Metaspace&) = delete;
  Metaspace& operator=(const Metaspace&) = delete;

  Loader create_loader(ms_loader_kind_t kind, unsigned flags = 0) {
    return Loader(ms_, kind, flags);
  }
  void purge() noexcept { ms_purge(ms_.get()); }
  ms_stats_t stats() const {
    ms_stats_t s{};
    if (ms_get_stats(ms_.get(), &s) != MS_OK) throw Error(ms_last_error());
    return s;
  }
  void verify() const {
    ms_error_t e = ms_verify(ms_.get());
    if (e != MS_OK) throw Error(e);
  }
  void print_report(FILE* out = stdout, const ms_report_options_t* options = nullptr) const {
    ms_error_t e = ms_print_report(ms_.get(), out, options);
    if (e != MS_OK) throw Error(e);
  }
  std::string report_text(const ms_report_options_t* options = nullptr) const {
    return collect(ms_print_report_cb, options);
  }
  std::string report_json(const ms_report_options_t* options = nullptr) const {
    return collect(ms_write_report_json_cb, options);
  }
  uint32_t encode(const void* klass) const noexcept { return ms_encode_class(ms_.get(), klass); }
  void* decode(uint32_t narrow) const noexcept { return ms_decode_class(ms_.get(), narrow); }
  unsigned narrow_bits() const noexcept { return ms_narrow_class_bits(ms_.get()); }
  ms_metaspace_t* get() const noexcept { return ms_.get(); }
  explicit operator bool() const noexcept { return ms_ != nullptr; }

 private:
  using ReportFn = ms_error_t (*)(ms_metaspace_t*, ms_write_fn, void*,
                                  const ms_report_options_t*) noexcept;
  static detail::SharedMetaspace create(const Settings& settings) {
    ms_metaspace_t* ms = ms_create(&settings.c());
    if (ms == nullptr) throw Error(ms_last_error());
    // If the control block cannot be allocated, shared_ptr runs the deleter and rethrows.
    return detail::SharedMetaspace(ms, detail::DestroyMetaspace{});
  }
  std::string collect(ReportFn fn, const ms_report_options_t* options) const {
    std::string text;
    ms_error_t e = fn(
        ms_.get(),
        [](void* user, const char* s, size_t n) {
          try {
            static_cast<std::string*>(user)->append(s, n);
          } catch (...) {  // no exception may cross the C callback; the text stays short
          }
        },
        &text, options);
    if (e != MS_OK) throw Error(e);
    return text;
  }

  detail::SharedMetaspace ms_;
};

// Dump time of a class-data archive (docs/archive.md): the builder, discarded when destroyed.
class ArchiveBuilder {
 public:
  // Throws Error if the settings are refused or no address space is left.
  explicit ArchiveBuilder(const ms_settings_t* settings = nullptr, uintptr_t requested_base = 0)
      : b_(ms_archive_begin(settings, requested_base)) {
    if (b_ == nullptr) throw Error(ms_last_error());
  }
  ArchiveBuilder(ArchiveBuilder&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
  ArchiveBuilder& operator=(ArchiveBuilder&& o) noexcept {
    if (this != &o) {
      ms_archive_discard(b_);
      b_ = std::exchange(o.b_, nullptr);
    }
    return *this;
  }
  ~ArchiveBuilder() { ms_archive_discard(b_); }

  // NULL on failure (ms_last_error), like ms_archive_allocate.
  void* allocate(ms_space_t space, size_t bytes) noexcept {
    return ms_archive_allocate(b_, space, bytes);
  }
  ms_error_t mark_pointer(void* slot) noexcept { return ms_archive_mark_pointer(b_, slot); }
  ms_error_t mark_narrow_class(void* slot) noexcept {
    return ms_archive_mark_narrow_class(b_, slot);
  }
  uint32_t encode_class(const void* klass) noexcept { return ms_archive_encode_class(b_, klass); }
  ms_error_t set_root(const char* name, const void* block) noexcept {
    return ms_archive_set_root(b_, name, block);
  }
  // Throws Error if the file cannot be written or a marked slot holds a foreign value.
  void write(const char* path) {
    ms_error_t e = ms_archive_write(b_, path);
    if (e != MS_OK) throw Error(e);
  }
  ms_archive_builder_t* get() const noexcept { return b_; }

 private:
  ms_archive_builder_t* b_;
};

}  // namespace ms

#endif  // C++14 or later
