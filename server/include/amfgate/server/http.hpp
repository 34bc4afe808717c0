// The HTTP daemon (Boost.Beast over Asio): routes, limits, timeouts, access log, graceful
// shutdown. `router` is the request handling as a plain function, tested without sockets.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amfgate/config.hpp"
#include "amfgate/server/gateway.hpp"
#include "amfgate/server/metrics.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

struct http_reply {
  unsigned status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";  ///< a literal
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::size_t messages = 0, faults = 0;
};

struct http_request {
  std::string_view method;  ///< "GET", "POST", ...
  std::string_view target;  ///< path with ;params and ?query
  std::string_view content_type;
  std::string_view cookie;  ///< the Cookie header
  std::string_view body;
  std::string client;  ///< "address:port"
};

class router {
 public:
  router(const config::gateway_config& cfg, gateway& gw, const metrics& m,
         services::session_store& sessions, std::shared_ptr<spdlog::logger> log);

  http_reply route(const http_request& req);
  /// While draining, /healthz answers 503 so balancers stop sending.
  void set_draining() { draining_ = true; }
  /// True when routing may wait on the network (a shared session store).
  bool blocking() const noexcept { return sessions_.blocking(); }
  /// True when routing `req` may wait on the network: it may use a shared session store.
  bool blocking(const http_request& req) const;

 private:
  std::string session_id(const http_request& req) const;

  const config::gateway_config& cfg_;
  gateway& gateway_;
  const metrics& metrics_;
  services::session_store& sessions_;
  std::shared_ptr<spdlog::logger> log_;
  std::string crossdomain_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> crossdomain_hint_logged_{false};
};

/// Serves until SIGTERM/SIGINT (or `stop`): the first signal stops accepting and lets
/// requests in flight finish within the grace period; a second one exits at once.
class http_server {
 public:
  http_server(const config::gateway_config& cfg, router& r, metrics& m,
              std::shared_ptr<spdlog::logger> log, std::shared_ptr<spdlog::logger> access);
  ~http_server();

  /// Binds (throws on failure), then serves on `cfg.threads` threads until stopped.
  /// Returns the process exit status.
  int run();
  /// The bound port, once `run` has bound it.
  std::uint16_t port() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace amfgate::server
