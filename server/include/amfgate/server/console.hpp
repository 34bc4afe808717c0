// The service console's static side: its page (server/console/, compiled into the binary,
// no network needed) and the list of services it shows. Its calls and decodes are json_api's;
// the router checks who may use it.
#pragma once

#include <optional>
#include <string_view>

#include "amfgate/config.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/services/registry.hpp"

namespace amfgate::server {

class console {
 public:
  explicit console(const services::registry& services) : services_(services) {}

  /// GET /console (the page) and its files (/console/console.js ...); nullopt otherwise.
  std::optional<http_reply> asset(std::string_view path) const;
  /// GET /console/services: every service, its methods, their parameter and result types.
  http_reply services() const;

 private:
  const services::registry& services_;
};

}  // namespace amfgate::server
