#include "amfgate/services/quote.hpp"

namespace amfgate::services {

std::string escaped(std::string_view text, std::size_t max) {
  static constexpr char hex[] = "0123456789abcdef";
  const std::string_view shown = text.substr(0, max);
  std::string out;
  out.reserve(shown.size() + 16);
  for (const char ch : shown) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  if (shown.size() < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string quoted(std::string_view text, std::size_t max) {
  return "\"" + escaped(text, max) + "\"";
}

}  // namespace amfgate::services
