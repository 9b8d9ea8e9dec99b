// Thin C++ API over metaspace.h: RAII owners for a metaspace and its loaders, errors as
// exceptions where construction fails. Allocation stays the inline C fast path.
#pragma once

#include <metaspace/metaspace.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace ms {

class Error : public std::runtime_error {
 public:
  explicit Error(ms_error_t code) : std::runtime_error(ms_last_error_text()), code_(code) {}
  ms_error_t code() const { return code_; }

 private:
  ms_error_t code_;
};

class Settings {
 public:
  Settings() { ms_settings_init(&s_); }
  Settings& reclaim(ms_reclaim_t r) { s_.reclaim = r; return *this; }
  Settings& commit_granule(size_t bytes) { s_.commit_granule_bytes = bytes; return *this; }
  Settings& root_chunk(size_t bytes) { s_.root_chunk_bytes = bytes; return *this; }
  Settings& node_size(size_t bytes) { s_.node_bytes = bytes; return *this; }
  Settings& class_space(size_t bytes, uintptr_t base = 0) {
    s_.class_space_bytes = bytes;
    s_.class_space_base = base;
    return *this;
  }
  Settings& class_alignment(size_t bytes) { s_.class_alignment_bytes = bytes; return *this; }
  Settings& max_committed(size_t bytes) { s_.max_committed_bytes = bytes; return *this; }
  Settings& gc_threshold(size_t bytes, ms_gc_callback_t cb, void* user) {
    s_.gc_threshold_bytes = bytes;
    s_.gc_callback = cb;
    s_.gc_callback_user = user;
    return *this;
  }
  Settings& checked(bool on) { s_.checked = on ? 1 : 0; return *this; }
  const ms_settings_t& c() const { return s_; }

 private:
  ms_settings_t s_;
};

class Loader {
 public:
  Loader() = default;
  Loader(ms_metaspace_t* ms, ms_loader_kind_t kind, unsigned flags = 0)
      : l_(ms_loader_create(ms, kind, flags)) {
    if (l_ == nullptr) throw Error(ms_last_error());
  }
  ~Loader() { reset(); }
  Loader(Loader&& o) noexcept : l_(std::exchange(o.l_, nullptr)) {}
  Loader& operator=(Loader&& o) noexcept {
    if (this != &o) {
      reset();
      l_ = std::exchange(o.l_, nullptr);
    }
    return *this;
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Null on failure (ms_last_error() says why): allocation failure is an expected event.
  void* allocate(ms_space_t space, size_t bytes) { return ms_allocate(l_, space, bytes); }
  void* allocate_class(size_t bytes) { return ms_allocate(l_, MS_SPACE_CLASS, bytes); }
  ms_error_t deallocate(void* p, size_t bytes) { return ms_deallocate(l_, p, bytes); }
  ms_loader_stats_t stats() const {
    ms_loader_stats_t s{};
    if (ms_loader_get_stats(l_, &s) != MS_OK) throw Error(ms_last_error());
    return s;
  }
  void reset() {
    if (l_ != nullptr) ms_loader_destroy(std::exchange(l_, nullptr));
  }
  ms_loader_t* get() const { return l_; }

 private:
  ms_loader_t* l_ = nullptr;
};

class Metaspace {
 public:
  explicit Metaspace(const Settings& settings = Settings()) : ms_(ms_create(&settings.c())) {
    if (ms_ == nullptr) throw Error(ms_last_error());
  }
  ~Metaspace() { ms_destroy(ms_); }
  Metaspace(const Metaspace&) = delete;
  Metaspace& operator=(const Metaspace&) = delete;

  Loader create_loader(ms_loader_kind_t kind, unsigned flags = 0) {
    return Loader(ms_, kind, flags);
  }
  void purge() { ms_purge(ms_); }
  ms_stats_t stats() const {
    ms_stats_t s{};
    if (ms_get_stats(ms_, &s) != MS_OK) throw Error(ms_last_error());
    return s;
  }
  void verify() const {
    ms_error_t e = ms_verify(ms_);
    if (e != MS_OK) throw Error(e);
  }
  void print_report(FILE* out = stdout, const ms_report_options_t* options = nullptr) const {
    ms_error_t e = ms_print_report(ms_, out, options);
    if (e != MS_OK) throw Error(e);
  }
  std::string report_json(const ms_report_options_t* options = nullptr) const {
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    if (f == nullptr) throw std::runtime_error("open_memstream failed");
    ms_error_t e = ms_write_report_json(ms_, f, options);
    std::fclose(f);
    std::string json(buf, len);
    std::free(buf);
    if (e != MS_OK) throw Error(e);
    return json;
  }
  uint32_t encode(const void* klass) const { return ms_encode_class(ms_, klass); }
  void* decode(uint32_t narrow) const { return ms_decode_class(ms_, narrow); }
  unsigned narrow_bits() const { return ms_narrow_class_bits(ms_); }
  ms_metaspace_t* get() const { return ms_; }

 private:
  ms_metaspace_t* ms_;
};

}  // namespace ms
