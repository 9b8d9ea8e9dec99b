#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "trace/line_source.hpp"
#include "trace/trace_event.hpp"

namespace lab {

// A trace that cannot be read or is inconsistent; the message starts with "file:line:".
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Streams the records of a trace (plain or gzip) one at a time: memory does not grow with the
// trace. Checks the syntax only; whether ids make sense (a loader born before it allocates) is
// the replay's business (TracePlayer).
class TraceReader {
 public:
  explicit TraceReader(const std::string& path);

  // The next event; false after the closing E line, whose count has been checked. Throws
  // TraceError on anything else: garbage, a malformed record, a file that ends before E.
  bool next(TraceEvent& event);

  [[noreturn]] void fail(const std::string& what) const;
  std::uint64_t line_number() const { return lines_.line_number(); }
  const std::string& path() const { return lines_.path(); }

 private:
  bool parse(std::string_view line, TraceEvent& event);
  // The next line; a read error (a corrupt or cut gzip stream) becomes a TraceError.
  bool next_line(std::string_view& line);

  LineSource lines_;
  std::uint64_t events_ = 0;
  bool ended_ = false;
};

}  // namespace lab
