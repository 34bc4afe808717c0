// POST <publish.path><destination>: a backend publishes to Flex consumers (README, "Publishing
// from a backend"). The body is plain JSON (the bridge's mapping):
//
//   {"body": <the message body>, "subtopic": "chat.room1", "headers": {"priority": 2}}
//
// answered 202 {"published": true}; 401 without credentials, 403 with a wrong token or a
// session without one of publish.roles, 404 for an unknown destination, 400 for a body or
// subtopic it refuses. Nothing is published unless the caller is let in.
#pragma once

#include <memory>
#include <string_view>

#include "amfgate/config.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/services/publisher.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

class publish_api {
 public:
  publish_api(const config::publish_settings& cfg, std::size_t max_depth, services::publisher& to,
              std::shared_ptr<spdlog::logger> log);

  enum class token { none, wrong, right };
  /// What the request's "Authorization: Bearer <token>" is (compared in constant time).
  token check(const http_request& req) const;
  /// Publishes what `req` holds to `destination`; the caller has been let in.
  http_reply publish(std::string_view destination, const http_request& req) const;

 private:
  const config::publish_settings& cfg_;
  std::size_t max_depth_;
  services::publisher& to_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace amfgate::server
