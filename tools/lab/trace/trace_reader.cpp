#include "trace/trace_reader.hpp"

#include <charconv>

#include "trace/trace_format.hpp"

namespace lab {
namespace {

// Splits off the next space-separated field.
std::string_view field(std::string_view& rest) {
  const auto space = rest.find(' ');
  std::string_view f = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
  return f;
}

// The decimal number at the front of `rest` and the space after it. False when there is none, it
// does not end at a space or the end of the line, or it is beyond 1.8e19. The hot path of a replay:
// three of these per allocation, so no from_chars on a split-off field.
bool take_number(std::string_view& rest, std::uint64_t& out) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  for (; i < rest.size(); ++i) {
    const unsigned digit = static_cast<unsigned char>(rest[i]) - unsigned{'0'};
    if (digit > 9) break;
    if (v > (~std::uint64_t{0} - 9) / 10) return false;
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  if (i < rest.size()) {
    if (rest[i] != ' ') return false;
    ++i;
  }
  rest.remove_prefix(i);
  out = v;
  return true;
}

bool number(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  auto r = std::from_chars(text.data(), text.data() + text.size(), out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : lines_(path) {
  std::string_view first;
  if (!next_line(first)) fail("empty file, expected '" + std::string(kTraceMagic) + "'");
  if (first != kTraceMagic)
    fail("not a metaspace trace: expected '" + std::string(kTraceMagic) + "' on the first line");
}

bool TraceReader::next_line(std::string_view& line) {
  try {
    return lines_.next(line);
  } catch (const std::runtime_error& e) {
    throw TraceError(e.what());
  }
}

void TraceReader::fail(const std::string& what) const {
  throw TraceError(lines_.path() + ":" + std::to_string(lines_.line_number()) + ": " + what);
}

bool TraceReader::next(TraceEvent& event) {
  std::string_view line;
  while (!ended_) {
    if (!next_line(line))
      fail("the trace ends without its closing 'E <events>' line (truncated after " + std::to_string(events_) +
           " events)");
    if (line.empty()) continue;
    if (line[0] == '#') continue;
    if (parse(line, event)) return true;
  }
  return false;
}

bool TraceReader::parse(std::string_view line, TraceEvent& event) {
  if (line.size() < 2 || line[1] != ' ') fail("expected a record 'B|A|F|D|M|E ...', got '" + std::string(line.substr(0, 40)) + "'");
  std::string_view rest = line.substr(2);
  auto num = [&](const char* what) {
    std::uint64_t v;
    if (!take_number(rest, v)) fail(std::string("expected ") + what + " (a number) in '" + std::string(line) + "'");
    return v;
  };
  auto done = [&] {
    if (!rest.empty()) fail("unexpected text after the record: '" + std::string(line) + "'");
  };
  switch (line[0]) {
    case 'A': {
      event.type = TraceEvent::Type::allocate;
      event.loader = num("loader id");
      const auto space = field(rest);
      if (space == "n") {
        event.space = Space::nonclass;
      } else if (space == "c") {
        event.space = Space::klass;
      } else {
        fail("expected space 'n' or 'c' in '" + std::string(line) + "'");
      }
      event.bytes = num("size in bytes");
      if (event.bytes == 0) fail("an allocation of 0 bytes: '" + std::string(line) + "'");
      event.allocation = num("allocation id");
      done();
      break;
    }
    case 'F':
      event.type = TraceEvent::Type::free;
      event.loader = num("loader id");
      event.allocation = num("allocation id");
      done();
      break;
    case 'B': {
      event.type = TraceEvent::Type::born;
      event.loader = num("loader id");
      const auto kind = field(rest);
      if (kind == "boot") {
        event.kind = LoaderKind::boot;
      } else if (kind == "standard") {
        event.kind = LoaderKind::standard;
      } else if (kind == "micro") {
        event.kind = LoaderKind::micro;
      } else {
        fail("expected loader kind boot, standard or micro in '" + std::string(line) + "'");
      }
      done();
      break;
    }
    case 'D':
      event.type = TraceEvent::Type::dies;
      event.loader = num("loader id");
      done();
      break;
    case 'M': {
      event.type = TraceEvent::Type::marker;
      event.label = std::string(field(rest));
      if (event.label.empty() || event.label.find('=') != std::string::npos)
        fail("expected a marker label in '" + std::string(line) + "'");
      event.figures.clear();
      while (!rest.empty()) {
        const auto kv = field(rest);
        const auto eq = kv.find('=');
        std::uint64_t v;
        if (eq == std::string_view::npos || eq == 0 || !number(kv.substr(eq + 1), v))
          fail("expected key=number in marker '" + std::string(line) + "'");
        event.figures.emplace_back(std::string(kv.substr(0, eq)), v);
      }
      break;
    }
    case 'E': {
      const auto count = num("event count");
      done();
      if (count != events_)
        fail("the E line counts " + std::to_string(count) + " events, the trace has " + std::to_string(events_));
      ended_ = true;
      std::string_view extra;
      while (next_line(extra))
        if (!extra.empty()) fail("text after the closing E line");
      return false;
    }
    default:
      fail("expected a record 'B|A|F|D|M|E ...', got '" + std::string(line.substr(0, 40)) + "'");
  }
  ++events_;
  return true;
}

}  // namespace lab
