// The gateway: one AMF request body in, one AMF response body out. No sockets here, so it is
// tested directly; the HTTP layer (http.hpp) feeds it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "amfgate/config.hpp"
#include "amfgate/services/registry.hpp"
#include "amfgate/services/session.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

/// What the HTTP layer knows of a request, and what the gateway tells it back.
struct exchange {
  std::string client_address;
  std::string session_id;  ///< from the cookie or the URL; empty if none

  // Set by the gateway:
  unsigned status = 200;
  std::string_view content_type = "application/x-amf";  ///< a literal
  std::string body;
  std::string new_session_id;  ///< a session was created: send the cookie
  bool session_ended = false;  ///< logout: clear the cookie
  std::size_t messages = 0;
  std::size_t faults = 0;
};

class gateway {
 public:
  gateway(const config::gateway_config& cfg, services::registry& services,
          services::session_store& sessions, const services::authenticator& auth,
          std::shared_ptr<spdlog::logger> log);

  /// Decodes `body`, runs every message, encodes the answers into `ex.body`. A body that
  /// does not decode is answered 400 with the codec's reason and byte offset.
  void handle(std::string_view body, exchange& ex);

  /// Whether handling `body` may use the session store: it names a session, or it may log in
  /// or out (a Credentials header; a Flex CommandMessage, which also negotiates small
  /// messages). A byte search, and a sound one: a header name and a class alias are written
  /// out in full the first time they appear in a packet.
  static bool may_use_sessions(std::string_view body, std::string_view session_id);

 private:
  struct request;
  amf::value call_netconnection(request& rq, const amf::body& b, bool& fault);
  amf::value flex_message(request& rq, const amf::value& v, bool& fault);
  amf::value invoke(request& rq, std::string_view service, std::string_view method,
                    std::span<const amf::value> args);
  void check_access(request& rq, std::string_view service, std::string_view method);
  void login(request& rq, std::string_view user, std::string_view password);
  /// The request's session, created if it has none; false (and `store_error`) when the store
  /// cannot be reached.
  bool open_session(request& rq);

  const config::gateway_config& cfg_;
  services::registry& services_;
  services::session_store& sessions_;
  const services::authenticator& auth_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace amfgate::server
