#pragma once

#include <zlib.h>

#include <cstdint>
#include <optional>
#include <string>

#include "trace/trace_event.hpp"

namespace lab {

// Writes a trace (docs/trace-format.md): gzip-compressed when the path ends in ".gz", plain text
// otherwise. finish() writes the closing E line; a trace without it reads as truncated, so a writer
// destroyed without finish() (an import that failed) leaves a file no reader accepts.
class TraceWriter {
 public:
  // gzip-compressed when `compress`, or by default when the path ends in ".gz".
  TraceWriter(const std::string& path, const std::string& source, std::optional<bool> compress = std::nullopt);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void born(std::uint64_t loader, LoaderKind kind);
  void allocate(std::uint64_t loader, Space space, std::uint64_t bytes, std::uint64_t allocation);
  void free(std::uint64_t loader, std::uint64_t allocation);
  void dies(std::uint64_t loader);
  void marker(const TraceEvent& marker);
  void comment(const std::string& text);
  void finish();

  std::uint64_t events() const { return events_; }

 private:
  void put(const char* text, std::size_t len);
  void put_number(std::uint64_t v);
  void put_char(char c);
  void flush();

  std::string path_;
  gzFile file_ = nullptr;
  std::string buffer_;
  std::uint64_t events_ = 0;
  bool finished_ = false;
};

}  // namespace lab
