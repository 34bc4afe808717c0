// Client text on its way into a fault or a log line: bounded and escaped, so that a request
// cannot make an answer or a log grow with what it sends, nor forge a log line.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace amfgate::services {

/// `text` with control characters, DEL, `"` and `\` escaped (`\n`, `\x1b`, ...), cut after
/// `max` bytes of input, then "...(N bytes)" giving the full length.
std::string escaped(std::string_view text, std::size_t max = 64);

/// What `escaped` returns, written to `out`, an output iterator of char (a log line's buffer,
/// with no string of its own).
template <class Out>
Out escape_to(Out out, std::string_view text, std::size_t max = 64) {
  static constexpr char hex[] = "0123456789abcdef";
  auto put = [&](std::string_view s) {
    for (const char c : s) *out++ = c;
  };
  const std::string_view shown = text.substr(0, max);
  for (const char ch : shown) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        put("\\n");
        break;
      case '\r':
        put("\\r");
        break;
      case '\t':
        put("\\t");
        break;
      case '"':
        put("\\\"");
        break;
      case '\\':
        put("\\\\");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          const char x[] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
          put({x, 4});
        } else {
          *out++ = ch;
        }
    }
  }
  if (shown.size() < text.size()) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, text.size()).ptr;
    put("...(");
    put({digits, static_cast<std::size_t>(end - digits)});
    put(" bytes)");
  }
  return out;
}

/// `escaped` in double quotes: `"name"`.
std::string quoted(std::string_view text, std::size_t max = 64);

}  // namespace amfgate::services
