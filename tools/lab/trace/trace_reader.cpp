#include "trace/trace_reader.hpp"

#include "trace/printable.hpp"
#include "trace/text_cursor.hpp"
#include "trace/trace_format.hpp"

namespace lab {

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
  throw TraceError(lines_.path() + ":" + std::to_string(lines_.line_number()) + ": " + printable(what));
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
  TextCursor c(line.substr(2));
  auto num = [&](const char* what) {
    std::uint64_t v;
    if (!c.decimal_word(v)) fail(std::string("expected ") + what + " (a number) in '" + std::string(line) + "'");
    return v;
  };
  auto word = [&] {
    std::string_view w;
    c.word(w);
    return w;
  };
  auto done = [&] {
    if (!c.at_end()) fail("unexpected text after the record: '" + std::string(line) + "'");
  };
  switch (line[0]) {
    case 'A': {
      event.type = TraceEvent::Type::allocate;
      event.loader = num("loader id");
      const auto space = word();
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
      const auto kind = loader_kind_from_name(word());
      if (!kind) fail("expected loader kind boot, standard or micro in '" + std::string(line) + "'");
      event.kind = *kind;
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
      event.label = std::string(word());
      if (event.label.empty() || event.label.find('=') != std::string::npos)
        fail("expected a marker label in '" + std::string(line) + "'");
      event.figures.clear();
      while (!c.at_end()) {
        const std::string_view kv = word();
        const auto eq = kv.find('=');
        TextCursor value(eq == std::string_view::npos ? std::string_view() : kv.substr(eq + 1));
        std::uint64_t v;
        if (eq == std::string_view::npos || eq == 0 || !value.decimal(v) || !value.at_end())
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
