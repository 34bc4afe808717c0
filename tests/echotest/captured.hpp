// Captured Flash Player EchoTest requests, sent as they are and answered byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace amfgate::echotest {

struct captured_request {
  std::string name;
  std::string_view hex;    ///< the request packet, lower-case hex without spaces
  std::size_t digits = 0;  ///< then this many characters of "0123456789" repeated
};

std::vector<captured_request> captured_requests();

/// The request packet's bytes.
std::string request_bytes(const captured_request& c);

}  // namespace amfgate::echotest
