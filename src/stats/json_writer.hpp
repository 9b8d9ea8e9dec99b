// A minimal streaming JSON writer for the report: objects, arrays, unsigned numbers, strings,
// booleans and null, indented two spaces. The library writes JSON itself so that it depends on nothing
// but libc; keys and values the report writes are plain ASCII, but strings are escaped anyway.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

namespace metaspace {

class JsonWriter {
 public:
  explicit JsonWriter(FILE* out) : out_(out) {}

  // `key` is null inside arrays and for the outermost value.
  void begin_object(const char* key = nullptr);
  void end_object();
  void begin_array(const char* key = nullptr);
  void end_array();
  void number(const char* key, uint64_t value);
  void signed_number(const char* key, int64_t value);
  void string(const char* key, const char* value);
  void boolean(const char* key, bool value);
  void null(const char* key);

 private:
  // Separator, newline and indentation before a value, and the key if there is one.
  void prefix(const char* key);
  void quoted(const char* s);
  void close(char bracket);

  FILE* out_;
  std::vector<bool> has_members_;  // one per open object or array
};

}  // namespace metaspace
