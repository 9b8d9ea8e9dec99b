#pragma once

#include <string>
#include <string_view>

namespace lab {

// `text` with every byte outside printable ASCII written as \xNN, so that a message quoting a
// broken input line is valid UTF-8 (the JSON writer throws on anything else) and shows what the
// bytes were.
inline std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace lab
