// What the router takes and gives: a request as the HTTP layer read it, and its answer.
#pragma once

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <cctype>
#include <functional>
#include <memory>
#include <memory_resource>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace amfgate::server {

/// Whether a Content-Type names `type` (lower case): media types are case-insensitive
/// (RFC 9110 8.3.1), and parameters and the spaces before them are not part of it, so
/// `Application/X-AMF ; charset=utf-8` is `application/x-amf`.
inline bool media_type_is(std::string_view content_type, std::string_view type) {
  auto t = content_type.substr(0, content_type.find(';'));
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  return std::ranges::equal(
      t, type, [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

/// A response body sent as it comes (HTTP streaming), a chunk at a time until it ends.
class body_stream {
 public:
  virtual ~body_stream() = default;
  /// The next bytes to send, however long they take to come; empty: the end. They stay
  /// valid until the next call.
  virtual boost::asio::awaitable<std::string_view> next() = 0;
  /// The last bytes `next` gave were not written (the client went away).
  virtual void unwritten() {}
};

struct http_reply {
  unsigned status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";  ///< a literal
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::size_t messages = 0, faults = 0;
  double parked_ms = -1;            ///< see exchange::parked_ms
  std::function<void()> unwritten;  ///< see exchange::unwritten
  /// Set: the body is streamed with chunked encoding (`body` is not sent), and the
  /// connection closes at its end.
  std::shared_ptr<body_stream> stream;
};

struct http_request {
  std::string_view method;  ///< "GET", "POST", ...
  std::string_view target;  ///< path with ;params and ?query
  std::string_view content_type;
  std::string_view cookie;  ///< the Cookie header
  std::string_view origin;  ///< the Origin header (browsers)
  std::string_view user_agent;
  std::string_view authorization;  ///< the Authorization header (the publish endpoint's token)
  unsigned listener = 0;  ///< the address it came in on: 0 `listen`, i `http_routes::also[i-1]`
  unsigned version = 11;  ///< HTTP/1.1: 11
  std::string body;       ///< moved to the gateway by `route`
  std::string client;     ///< "address:port"
  std::pmr::memory_resource* memory = nullptr;  ///< see exchange::memory
  /// See exchange::on_wait and exchange::on_park.
  std::function<void()> on_wait;
  std::function<void(bool)> on_park;
};

}  // namespace amfgate::server
