// Base64 (RFC 4648): the credentials of a Flex login, and ByteArrays in the bridge's JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace amf {

/// The standard alphabet, padded.
std::string base64_encode(std::string_view bytes);
/// Either alphabet (standard or URL-safe), padding optional; nullopt at any other character
/// or a length no encoder writes.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace amf
