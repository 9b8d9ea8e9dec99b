#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>

namespace lab {

// Walks one log line left to right. Each step returns false when the text does not match, so the
// caller can say what it expected where.
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
  std::string_view rest() const { return rest_; }

 private:
  bool number(std::uint64_t& out, int base) {
    auto r = std::from_chars(rest_.data(), rest_.data() + rest_.size(), out, base);
    if (r.ec != std::errc()) return false;
    rest_.remove_prefix(static_cast<std::size_t>(r.ptr - rest_.data()));
    return true;
  }

  std::string_view rest_;
};

}  // namespace lab
