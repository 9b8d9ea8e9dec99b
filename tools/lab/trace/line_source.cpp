#include "trace/line_source.hpp"

#include <cstring>
#include <stdexcept>

namespace lab {
namespace {

constexpr std::size_t kBufferBytes = 1 << 20;

}  // namespace

LineSource::LineSource(std::string path) : path_(std::move(path)), buffer_(kBufferBytes) {
  file_ = gzopen(path_.c_str(), "rb");
  if (!file_) throw std::runtime_error("cannot open " + path_ + ": " + std::strerror(errno));
  gzbuffer(file_, 256 * 1024);
}

LineSource::~LineSource() {
  if (file_) gzclose(file_);
}

bool LineSource::refill() {
  if (eof_) return false;
  // Keep the unfinished line, move it to the front, read behind it.
  const std::size_t pending = end_ - begin_;
  if (pending == buffer_.size())
    throw std::runtime_error(path_ + ":" + std::to_string(line_number_ + 1) + ": line longer than " +
                             std::to_string(kMaxLine) + " bytes (not a text log?)");
  std::memmove(buffer_.data(), buffer_.data() + begin_, pending);
  begin_ = 0;
  end_ = pending;
  const int n = gzread(file_, buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
  if (n < 0) {
    int code = 0;
    const char* msg = gzerror(file_, &code);
    throw std::runtime_error(std::string(msg ? msg : "read error"));
  }
  if (n == 0) {
    // A gzip stream cut short reads as a clean end in zlib; gzerror reports it.
    int code = 0;
    const char* msg = gzerror(file_, &code);
    if (code != Z_OK && code != Z_STREAM_END)
      // zlib's message names the file already.
      throw std::runtime_error(std::string(msg ? msg : "read error") + " (truncated compressed file?)");
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(n);
  return true;
}

bool LineSource::next(std::string_view& line) {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const std::size_t avail = end_ - begin_;
    if (const void* nl = std::memchr(start, '\n', avail)) {
      const std::size_t len = static_cast<const char*>(nl) - start;
      // The buffer holds lines up to 1 MiB; the limit is the format's, not the buffer's.
      if (len > kMaxLine)
        throw std::runtime_error(path_ + ":" + std::to_string(line_number_ + 1) + ": line longer than " +
                                 std::to_string(kMaxLine) + " bytes (not a text file?)");
      line = std::string_view(start, len);
      begin_ += len + 1;
      ++line_number_;
      return true;
    }
    if (avail > kMaxLine)
      throw std::runtime_error(path_ + ":" + std::to_string(line_number_ + 1) + ": line longer than " +
                               std::to_string(kMaxLine) + " bytes (not a text file?)");
    if (!refill()) {
      if (end_ == begin_) return false;
      line = std::string_view(buffer_.data() + begin_, end_ - begin_);
      begin_ = end_;
      ++line_number_;
      no_final_newline_ = true;
      return true;
    }
  }
}

}  // namespace lab
