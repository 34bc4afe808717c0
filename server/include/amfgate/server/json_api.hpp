// The bound methods over JSON (POST /json/<Service>/<method>, /json/login, /json/logout) and
// the console's traced calls. Each request becomes the AMF packet an AMF client would send
// and runs through the gateway, so that access rules, logins, sessions, deadlines and limits
// are the AMF side's own, and faults carry the same code and message; arguments and answers
// are typed JSON (docs/typed-json.md; plain JSON reads as the obvious types).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "amfgate/config.hpp"
#include "amfgate/server/gateway.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/services/registry.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

/// How the console sends a call.
enum class call_encoding { amf0, amf3, flex };

class json_api {
 public:
  json_api(const config::gateway_config& cfg, gateway& gw, const services::registry& services,
           std::shared_ptr<spdlog::logger> log);

  /// POST /json/<Service>/<method> with a JSON array of arguments: 200 and the result, or a
  /// fault object {"faultCode", "faultString", "faultDetail"} with a 4xx/5xx status.
  /// `ex` tells the session (and gets the gateway's answer: a new or ended session).
  boost::asio::awaitable<http_reply> call(std::string_view service, std::string_view method,
                                          http_request& req, exchange& ex);
  /// POST /json/login {"user", "password"}: a Flex login (one password check, the session
  /// cookie); POST /json/logout ends the session.
  boost::asio::awaitable<http_reply> login(http_request& req, exchange& ex);
  boost::asio::awaitable<http_reply> logout(exchange& ex);
  /// The console's call: {"service", "method", "arguments": [...], "encoding": "amf0" |
  /// "amf3" | "flex"} answered with the packet sent and the one received, as hex and as
  /// typed JSON, the HTTP status and the time taken.
  boost::asio::awaitable<http_reply> trace(http_request& req, exchange& ex);
  /// POST /console/decode: the packet in the body (bytes) as typed JSON, or the decoder's
  /// reason and byte offset (422), with the daemon's depth limit.
  http_reply decode(const http_request& req) const;

 private:
  /// Runs `packet` through the gateway: the first body of its answer, decoded into `answer`
  /// (it points into `ex.body`), or the refusal when the gateway did not answer 200.
  boost::asio::awaitable<std::variant<http_reply, amf::body>> first_answer(std::string packet,
                                                                           exchange& ex,
                                                                           amf::document& answer);

  const config::gateway_config& cfg_;
  gateway& gateway_;
  const services::registry& services_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace amfgate::server
