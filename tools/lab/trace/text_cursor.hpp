#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace lab {

// Walks one line (of a HotSpot log or a trace) left to right. Each step returns false when the text
// does not match, so the caller can say what it expected where. The one tokenizer of the lab.
class TextCursor {
 public:
  explicit TextCursor(std::string_view text) : rest_(text) {}

  bool literal(std::string_view s) {
    if (rest_.substr(0, s.size()) != s) return false;
    rest_.remove_prefix(s.size());
    return true;
  }
  bool decimal(std::uint64_t& out) { return number(out, 10); }
  // "0x" followed by hex digits.
  bool address(std::uint64_t& out) { return literal("0x") && number(out, 16); }
  // Moves past the next occurrence of s.
  bool skip_past(std::string_view s) {
    const auto at = rest_.find(s);
    if (at == std::string_view::npos) return false;
    rest_.remove_prefix(at + s.size());
    return true;
  }
  bool starts_with(std::string_view s) const { return rest_.substr(0, s.size()) == s; }
  bool at_end() const { return rest_.empty(); }
  // The text up to the next space (or the end), and the space: one field of a trace record.
  bool word(std::string_view& out) {
    const auto space = rest_.find(' ');
    out = rest_.substr(0, space);
    rest_ = space == std::string_view::npos ? std::string_view() : rest_.substr(space + 1);
    return !out.empty();
  }
  // A decimal field: the number, then a space or the end of the line.
  bool decimal_word(std::uint64_t& out) {
    std::uint64_t v = 0;
    if (!decimal(v)) return false;
    if (!rest_.empty() && !literal(" ")) return false;
    out = v;
    return true;
  }
  std::string_view rest() const { return rest_; }

 private:
  bool number(std::uint64_t& out, int base) {
    if (rest_.empty() || rest_[0] == '-' || rest_[0] == '+') return false;
    auto r = std::from_chars(rest_.data(), rest_.data() + rest_.size(), out, base);
    if (r.ec != std::errc()) return false;
    rest_.remove_prefix(static_cast<std::size_t>(r.ptr - rest_.data()));
    return true;
  }

  std::string_view rest_;
};

}  // namespace lab
