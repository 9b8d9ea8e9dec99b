#include "stats/json_writer.hpp"

#include <cinttypes>

namespace metaspace {

void JsonWriter::prefix(const char* key) {
  if (!has_members_.empty()) {
    if (has_members_.back()) std::fputc(',', out_);
    has_members_.back() = true;
    std::fputc('\n', out_);
    for (size_t i = 0; i < has_members_.size(); i++) std::fputs("  ", out_);
  }
  if (key != nullptr) {
    quoted(key);
    std::fputs(": ", out_);
  }
}

void JsonWriter::quoted(const char* s) {
  std::fputc('"', out_);
  for (; *s != '\0'; s++) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      std::fputc('\\', out_);
      std::fputc(c, out_);
    } else if (c < 0x20) {
      std::fprintf(out_, "\\u%04x", c);
    } else {
      std::fputc(c, out_);
    }
  }
  std::fputc('"', out_);
}

void JsonWriter::close(char bracket) {
  bool had_members = has_members_.back();
  has_members_.pop_back();
  if (had_members) {
    std::fputc('\n', out_);
    for (size_t i = 0; i < has_members_.size(); i++) std::fputs("  ", out_);
  }
  std::fputc(bracket, out_);
  if (has_members_.empty()) std::fputc('\n', out_);
}

void JsonWriter::begin_object(const char* key) {
  prefix(key);
  std::fputc('{', out_);
  has_members_.push_back(false);
}

void JsonWriter::end_object() { close('}'); }

void JsonWriter::begin_array(const char* key) {
  prefix(key);
  std::fputc('[', out_);
  has_members_.push_back(false);
}

void JsonWriter::end_array() { close(']'); }

void JsonWriter::number(const char* key, uint64_t value) {
  prefix(key);
  std::fprintf(out_, "%" PRIu64, value);
}

void JsonWriter::signed_number(const char* key, int64_t value) {
  prefix(key);
  std::fprintf(out_, "%" PRId64, value);
}

void JsonWriter::string(const char* key, const char* value) {
  prefix(key);
  quoted(value);
}

void JsonWriter::boolean(const char* key, bool value) {
  prefix(key);
  std::fputs(value ? "true" : "false", out_);
}

void JsonWriter::null(const char* key) {
  prefix(key);
  std::fputs("null", out_);
}

}  // namespace metaspace
