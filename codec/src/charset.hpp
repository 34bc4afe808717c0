// Internal: the charsets of IDataInput.readMultiByte that externalizable codecs meet.
#pragma once

#include <string>
#include <string_view>

namespace amf::charset {

/// True for "utf-8"/"utf8", false for "iso-8859-1"/"latin1"/"us-ascii"; sets `known`.
inline bool is_utf8(std::string_view cs, bool& known) {
  std::string l;
  for (char c : cs) l += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  known = true;
  if (l == "utf-8" || l == "utf8") return true;
  if (l == "iso-8859-1" || l == "latin1" || l == "us-ascii" || l == "ascii") return false;
  known = false;
  return false;
}

/// Bytes in charset `cs` to UTF-8; false for an unknown charset.
inline bool to_utf8(std::string_view cs, std::string_view in, std::string& out) {
  bool known;
  if (is_utf8(cs, known) || !known) {
    out.assign(in);
    return known;
  }
  for (unsigned char c : in) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return true;
}

/// UTF-8 to bytes in charset `cs` (characters above U+00FF become '?' in Latin-1).
inline std::string from_utf8(std::string_view cs, std::string_view in) {
  bool known;
  if (is_utf8(cs, known) || !known) return std::string(in);
  std::string out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c & 0xE0) == 0xC0 && i + 1 < in.size()) {
      unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(in[++i]) & 0x3Fu);
      out += static_cast<char>(cp <= 0xFF ? cp : '?');
    } else {
      out += '?';
      while (i + 1 < in.size() && (static_cast<unsigned char>(in[i + 1]) & 0xC0) == 0x80) ++i;
    }
  }
  return out;
}

}  // namespace amf::charset
