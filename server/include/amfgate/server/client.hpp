// A small synchronous HTTP client for AMF gateways (amfcall and the integration tests):
// keep-alive, a cookie jar, and helpers that build NetConnection and Flex request packets.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amf/flex.hpp"
#include "amf/value.hpp"

namespace amfgate::client {

struct url {
  std::string host;
  std::string port = "80";
  std::string target = "/";
  /// "http://host[:port]/path"; throws std::invalid_argument otherwise.
  static url parse(std::string_view text);
};

struct response {
  unsigned status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string header(std::string_view name) const;  ///< first of that name, or ""
};

class http_client {
 public:
  /// Connects lazily to `host:port`; reconnects if the server closed the connection.
  http_client(std::string host, std::string port);
  ~http_client();

  response post(const std::string& target, const std::string& body,
                const std::string& content_type = "application/x-amf");
  response get(const std::string& target);
  /// Sends `raw` bytes as they are (for malformed-request tests) and returns what comes back
  /// until the server closes or `timeout_ms` passes.
  std::string raw(const std::string& raw, int timeout_ms = 2000);

  std::map<std::string, std::string> cookies;

 private:
  response request(const std::string& method, const std::string& target, const std::string& body,
                   const std::string& content_type);
  struct impl;
  std::unique_ptr<impl> impl_;
  std::string host_, port_;
};

/// A NetConnection call: packet version 0 (AMF0 arguments) or 3 (each argument behind the
/// AMF3 switch), target "Service.method", response "/1"; optional Credentials header.
std::string netconnection_request(std::string_view target, std::span<const amf::value> args,
                                  bool amf3, std::string_view user = {},
                                  std::string_view password = {}, int call_number = 1);
/// A packet of Flex messages, one per body ("null" target, "/1", "/2" ...).
std::string flex_request(std::span<const amf::value> messages);

/// Flex CommandMessage (ping, login with base64 "user:password", logout) and
/// RemotingMessage builders, as Flash Player's mx.rpc classes send them.
amf::value flex_command(amf::document& doc, amf::flex::operation op, std::string_view dsid,
                        std::string_view login_user = {}, std::string_view login_password = {});
amf::value flex_remoting(amf::document& doc, std::string_view destination, std::string_view method,
                         std::span<const amf::value> args, std::string_view dsid);

}  // namespace amfgate::client
