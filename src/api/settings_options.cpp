// METASPACE_OPTIONS: settings from text, the way mimalloc (MIMALLOC_*) and jemalloc (MALLOC_CONF)
// let a user tune an allocator without recompiling the runtime. Only the syntax is checked here
// (known key, well-formed value); ranges are ms_create's, as for settings set in code.
#include <metaspace/metaspace.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "api/exception_barrier.hpp"
#include "api/fork_handlers.hpp"
#include "api/struct_size.hpp"
#include "instance/settings.hpp"
#include "common/error.hpp"

using metaspace::fail;

namespace {

constexpr const char* kVariable = "METASPACE_OPTIONS";
constexpr const char* kKnownKeys =
    "reclaim, granule, root_chunk, node, class_space, class_base, class_alignment, "
    "max_committed, gc_threshold, checked, report_at_exit, verbose, archive, archive_policy, "
    "archive_verify, archive_relocation, count_allocations";

// An archive path from text must outlive the text: kept for the life of the process, once per
// distinct path (a process names a handful).
const char* interned_path(std::string_view path) {
  metaspace::api::install_fork_handlers();  // its lock is then covered by the fork gate
  static std::mutex lock;
  static std::set<std::string, std::less<>>* paths = new std::set<std::string, std::less<>>();
  std::lock_guard<std::mutex> guard(lock);
  return paths->emplace(path).first->c_str();
}

// The one number syntax of every size and address key: decimal digits ("4096", "16k", "4m",
// "1g", "16kb": binary suffixes), or "0x" and hex digits ("0x40000000", no suffix). Nothing else:
// no sign, no whitespace (newlines included), no leading zero (strtoull would read "010k" as
// octal, 8 KiB; refusing it spares a user who meant 10 KiB the surprise), no overflow.
bool parse_bytes(std::string_view text, size_t* out) {
  auto digit = [](char c, unsigned base) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    char lower = static_cast<char>(c | 0x20);
    if (base == 16 && lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
    return -1;
  };
  unsigned base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] | 0x20) == 'x') {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0' && digit(text[1], 10) >= 0) {
    return false;  // a leading zero: octal to strtoull, refused here
  }
  unsigned long long value = 0;
  size_t i = 0;
  for (; i < text.size(); i++) {
    int d = digit(text[i], base);
    if (d < 0) break;
    if (value > (~0ull - static_cast<unsigned>(d)) / base) return false;
    value = value * base + static_cast<unsigned>(d);
  }
  if (i == 0) return false;
  std::string_view suffix = text.substr(i);
  unsigned shift = 0;
  if (!suffix.empty()) {
    if (base != 10) return false;
    switch (suffix[0] | 0x20) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      default: return false;
    }
    suffix.remove_prefix(1);
    if (!suffix.empty() && (suffix[0] | 0x20) == 'b') suffix.remove_prefix(1);  // "16kb" too
    if (!suffix.empty()) return false;
  }
  if (shift != 0 && value > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(value << shift);
  return true;
}

bool parse_flag(std::string_view text, int* out) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") {
    *out = 1;
  } else if (text == "0" || text == "false" || text == "no" || text == "off") {
    *out = 0;
  } else {
    return false;
  }
  return true;
}

// One key=value over `s`; false with the error recorded.
bool apply(std::string_view key, std::string_view value, ms_settings_t* s) {
  auto bad = [&](const char* expected) {
    fail(MS_ERR_INVALID_ARGUMENT, "%s: %.*s=%.*s: expected %s", kVariable,
         static_cast<int>(key.size()), key.data(), static_cast<int>(value.size()), value.data(),
         expected);
    return false;
  };
  struct SizeKey {
    const char* name;
    size_t ms_settings_t::*field;
  };
  static constexpr SizeKey kSizes[] = {
      {"granule", &ms_settings_t::commit_granule_bytes},
      {"root_chunk", &ms_settings_t::root_chunk_bytes},
      {"node", &ms_settings_t::node_bytes},
      {"class_space", &ms_settings_t::class_space_bytes},
      {"class_alignment", &ms_settings_t::class_alignment_bytes},
      {"max_committed", &ms_settings_t::max_committed_bytes},
      {"gc_threshold", &ms_settings_t::gc_threshold_bytes},
  };
  for (const SizeKey& k : kSizes) {
    if (key == k.name) {
      return parse_bytes(value, &(s->*k.field)) || bad("a size: decimal bytes without leading zeros, with k, m or g, or 0x and hex digits");
    }
  }
  if (key == "class_base") {
    size_t base = 0;
    if (!parse_bytes(value, &base)) return bad("an address: 0x and hex digits, or decimal without leading zeros");
    s->class_space_base = base;
    return true;
  }
  if (key == "reclaim") {
    if (value == "none") s->reclaim = MS_RECLAIM_NONE;
    else if (value == "balanced") s->reclaim = MS_RECLAIM_BALANCED;
    else if (value == "aggressive") s->reclaim = MS_RECLAIM_AGGRESSIVE;
    else return bad("none, balanced or aggressive");
    return true;
  }
  if (key == "checked") return parse_flag(value, &s->checked) || bad("0 or 1");
  if (key == "archive") {
    if (value.empty()) return bad("a path");
    s->archive_path = interned_path(value);
    return true;
  }
  if (key == "archive_policy") {
    if (value == "auto") s->archive_policy = MS_ARCHIVE_AUTO;
    else if (value == "require") s->archive_policy = MS_ARCHIVE_REQUIRE;
    else return bad("auto or require");
    return true;
  }
  if (key == "archive_verify") return parse_flag(value, &s->archive_verify) || bad("0 or 1");
  if (key == "archive_relocation") {
    if (value == "auto") s->archive_relocation = MS_ARCHIVE_RELOCATE_AUTO;
    else if (value == "eager") s->archive_relocation = MS_ARCHIVE_RELOCATE_EAGER;
    else if (value == "lazy") s->archive_relocation = MS_ARCHIVE_RELOCATE_LAZY;
    else return bad("auto, eager or lazy");
    return true;
  }
  if (key == "verbose") return parse_flag(value, &s->verbose) || bad("0 or 1");
  if (key == "count_allocations") {
    return parse_flag(value, &s->count_allocations) || bad("0 or 1");
  }
  if (key == "report_at_exit") {
    if (value == "none" || value == "0") s->report_at_exit = MS_REPORT_NONE;
    else if (value == "text" || value == "1") s->report_at_exit = MS_REPORT_TEXT;
    else if (value == "json") s->report_at_exit = MS_REPORT_JSON;
    else return bad("none, text or json");
    return true;
  }
  fail(MS_ERR_INVALID_ARGUMENT, "%s: unknown key '%.*s' (known: %s)", kVariable,
       static_cast<int>(key.size()), key.data(), kKnownKeys);
  return false;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

extern "C" {

ms_error_t ms_settings_parse(ms_settings_t* settings, const char* options) noexcept {
  return metaspace::api::barrier_error("ms_settings_parse", [&] {
    if (settings == nullptr) return fail(MS_ERR_INVALID_ARGUMENT, "no settings");
    if (options == nullptr) return MS_OK;
    // All or nothing, and only the bytes the caller's header has.
    size_t bytes = 0;
    if (!metaspace::api::caller_struct_bytes("settings", settings->size, sizeof(ms_settings_t),
                                             metaspace::api::kSettingsBytesV0_2, &bytes)) {
      return ms_last_error();
    }
    ms_settings_t s = metaspace::default_settings();
    std::memcpy(&s, settings, bytes);
    std::string_view rest(options);
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view item = trim(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) {
        return fail(MS_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not key=value", kVariable,
                    static_cast<int>(item.size()), item.data());
      }
      if (!apply(trim(item.substr(0, eq)), trim(item.substr(eq + 1)), &s)) {
        return ms_last_error();
      }
    }
    // Fields beyond the caller's struct cannot carry what the text set: refuse rather than drop.
    ms_settings_t defaults = metaspace::default_settings();
    const bool has_archive = bytes >= offsetof(ms_settings_t, archive_verify) + sizeof(int);
    const bool has_relocation = bytes >= offsetof(ms_settings_t, archive_relocation) + sizeof(int);
    const bool has_counting = bytes >= offsetof(ms_settings_t, count_allocations) + sizeof(int);
    if ((!has_archive &&
         (s.archive_path != defaults.archive_path || s.archive_policy != defaults.archive_policy ||
          s.archive_verify != defaults.archive_verify)) ||
        (!has_relocation && s.archive_relocation != defaults.archive_relocation)) {
      return fail(MS_ERR_INVALID_ARGUMENT, "%s: archive options need the archive fields of "
                  "ms_settings_t, which the caller's struct (%zu bytes) does not have", kVariable,
                  bytes);
    }
    if (!has_counting && s.count_allocations != defaults.count_allocations) {
      return fail(MS_ERR_INVALID_ARGUMENT, "%s: count_allocations needs the field of "
                  "ms_settings_t, which the caller's struct (%zu bytes) does not have", kVariable,
                  bytes);
    }
    std::memcpy(settings, &s, bytes);
    return MS_OK;
  });
}

ms_error_t ms_settings_from_env(ms_settings_t* settings) noexcept {
  return ms_settings_parse(settings, std::getenv(kVariable));
}

}  // extern "C"
