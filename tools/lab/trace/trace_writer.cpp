#include "trace/trace_writer.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "trace/trace_format.hpp"

namespace lab {
namespace {

constexpr std::size_t kFlushBytes = 1 << 18;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, const std::string& source, std::optional<bool> compress)
    : path_(path) {
  // "T": zlib writes plain text, so one code path serves both.
  file_ = gzopen(path.c_str(), compress.value_or(ends_with(path, ".gz")) ? "wb6" : "wT");
  if (!file_) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  buffer_.reserve(kFlushBytes + 1024);
  buffer_ += kTraceMagic;
  buffer_ += '\n';
  comment("source: " + source);
}

TraceWriter::~TraceWriter() {
  if (!file_) return;
  if (finished_) return;
  // An unfinished trace keeps no E line: readers report it as truncated.
  flush();
  gzclose(file_);
}

void TraceWriter::put(const char* text, std::size_t len) { buffer_.append(text, len); }

void TraceWriter::put_char(char c) { buffer_.push_back(c); }

void TraceWriter::put_number(std::uint64_t v) {
  char digits[24];
  auto r = std::to_chars(digits, digits + sizeof digits, v);
  buffer_.append(digits, r.ptr);
}

void TraceWriter::flush() {
  if (buffer_.empty()) return;
  if (gzwrite(file_, buffer_.data(), static_cast<unsigned>(buffer_.size())) != static_cast<int>(buffer_.size()))
    throw std::runtime_error("cannot write " + path_);
  buffer_.clear();
}

void TraceWriter::born(std::uint64_t loader, LoaderKind kind) {
  put("B ", 2);
  put_number(loader);
  put_char(' ');
  const char* k = loader_kind_name(kind);
  put(k, std::strlen(k));
  put_char('\n');
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush();
}

void TraceWriter::allocate(std::uint64_t loader, Space space, std::uint64_t bytes, std::uint64_t allocation) {
  put("A ", 2);
  put_number(loader);
  put(space == Space::klass ? " c " : " n ", 3);
  put_number(bytes);
  put_char(' ');
  put_number(allocation);
  put_char('\n');
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush();
}

void TraceWriter::free(std::uint64_t loader, std::uint64_t allocation) {
  put("F ", 2);
  put_number(loader);
  put_char(' ');
  put_number(allocation);
  put_char('\n');
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush();
}

void TraceWriter::dies(std::uint64_t loader) {
  put("D ", 2);
  put_number(loader);
  put_char('\n');
  ++events_;
  if (buffer_.size() >= kFlushBytes) flush();
}

void TraceWriter::marker(const TraceEvent& marker) {
  put("M ", 2);
  put(marker.label.data(), marker.label.size());
  for (const auto& [key, value] : marker.figures) {
    put_char(' ');
    put(key.data(), key.size());
    put_char('=');
    put_number(value);
  }
  put_char('\n');
  ++events_;
}

void TraceWriter::comment(const std::string& text) {
  put("# ", 2);
  for (char c : text) put_char(c == '\n' ? ' ' : c);
  put_char('\n');
}

void TraceWriter::finish() {
  put("E ", 2);
  put_number(events_);
  put_char('\n');
  flush();
  finished_ = true;
  if (gzclose(file_) != Z_OK) {
    file_ = nullptr;
    throw std::runtime_error("cannot finish writing " + path_);
  }
  file_ = nullptr;
}

}  // namespace lab
