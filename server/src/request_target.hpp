// What the router, the gateway and the connection read from a request's target, cookie,
// form body and client address.
#pragma once

#include <string_view>

namespace amfgate::server {

/// The target without its parameters (`;jsessionid=...`, `?query`).
inline std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find_first_of(";?"));
}

/// The value of `name=` in a "k=v; k=v" or ";k=v?k=v&k=v" string; empty if none.
inline std::string_view param(std::string_view s, std::string_view name) {
  for (std::size_t at = 0; (at = s.find(name, at)) != std::string_view::npos; at += name.size()) {
    const bool starts =
        at == 0 || std::string_view(" ;?&").find(s[at - 1]) != std::string_view::npos;
    if (starts && at + name.size() < s.size() && s[at + name.size()] == '=') {
      auto v = s.substr(at + name.size() + 1);
      return v.substr(0, v.find_first_of(";&? "));
    }
  }
  return {};
}

/// "address" of "address:port" (IPv6 as "[::1]:port" or "::1:port" alike).
inline std::string_view address_of(std::string_view client) {
  if (auto colon = client.rfind(':'); colon != std::string_view::npos) {
    client = client.substr(0, colon);
  }
  return client;
}

}  // namespace amfgate::server
