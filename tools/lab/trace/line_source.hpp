#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lab {

// Reads a text file line by line, plain or gzip-compressed (zlib tells them apart by the magic
// bytes), through one fixed buffer: memory stays bounded however long the file is. Lines longer
// than the buffer are an error, never silently split. Throws std::runtime_error naming the file.
class LineSource {
 public:
  explicit LineSource(std::string path);
  ~LineSource();
  LineSource(const LineSource&) = delete;
  LineSource& operator=(const LineSource&) = delete;

  // The next line without its '\n'; false at the end of the file. The view stays valid until the
  // next call. A last line without '\n' is returned too, and ended_without_newline() says so.
  bool next(std::string_view& line);

  const std::string& path() const { return path_; }
  std::uint64_t line_number() const { return line_number_; }
  bool ended_without_newline() const { return no_final_newline_; }

  static constexpr std::size_t kMaxLine = 1 << 16;

 private:
  bool refill();

  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  bool eof_ = false;
  bool no_final_newline_ = false;
  std::uint64_t line_number_ = 0;
};

}  // namespace lab
