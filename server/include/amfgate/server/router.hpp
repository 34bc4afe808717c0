// The router: which part of the daemon answers a request (the AMF gateway and the Flex
// channel's streams, the JSON endpoint, the console, /metrics, /healthz, /crossdomain.xml), and
// the CORS and session cookie headers of its answers. A plain function of an http_request, so
// it is tested without sockets (tests/server/router_test.cpp); the HTTP layer serves it
// through `routes()`.
#pragma once

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>
#include <string_view>

#include "amfgate/bridge/bridge.hpp"
#include "amfgate/config.hpp"
#include "amfgate/messaging/channel.hpp"
#include "amfgate/server/console.hpp"
#include "amfgate/server/gateway.hpp"
#include "amfgate/server/http.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/server/json_api.hpp"
#include "amfgate/server/metrics.hpp"
#include "amfgate/server/publish_api.hpp"
#include "amfgate/server/workers.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

class router {
 public:
  router(const config::gateway_config& cfg, gateway& gw, messaging::channel& channel,
         const services::registry& services, const metrics& m, services::session_store& sessions,
         worker_pool& workers, const bridge::bridge& bridged, std::shared_ptr<spdlog::logger> log);

  /// Answers `req`: the coroutine, to run on the connection's executor (see gateway::handle),
  /// that answers it. May throw as it picks one.
  boost::asio::awaitable<http_reply> route(http_request& req);
  /// While draining, /healthz answers 503 so balancers stop sending, and parked polls
  /// answer now.
  void set_draining() {
    draining_ = true;
    channel_.messages().drain();
  }
  /// This router as what an http_server serves, with the publish endpoint's own address if it
  /// has one; it must outlive the server's run.
  http_routes routes() {
    http_routes r;
    r.route = [this](http_request& req) { return route(req); };
    r.on_drain = [this] { set_draining(); };
    if (cfg_.publish.enabled && cfg_.publish.listen) r.also.push_back(*cfg_.publish.listen);
    return r;
  }

 private:
  std::string session_id(const http_request& req) const;
  /// Adds the Access-Control-* headers when `req` comes from an origin of cors.allow_origins;
  /// false (and a debug line) for an origin that is not allowed, or with CORS off.
  bool allow_origin(const http_request& req, http_reply& r) const;
  boost::asio::awaitable<http_reply> metrics_page();
  /// The exchange of a gateway call for `req`: its client, session, memory and hang-up watch.
  exchange exchange_for(http_request& req) const;
  /// Set-Cookie for a session that `ex` created or ended.
  void session_cookie(const exchange& ex, http_reply& r) const;
  /// An AMF packet POSTed to a gateway path, through the gateway; `r` has the CORS headers.
  boost::asio::awaitable<http_reply> amf_route(http_request& req, http_reply r);
  boost::asio::awaitable<http_reply> json_route(std::string_view path, http_request& req);
  /// A StreamingAMFChannel's `?command=open` (the stream) or `?command=close`; `r` has the
  /// CORS headers.
  boost::asio::awaitable<http_reply> stream_route(std::string_view command, http_request& req,
                                                  http_reply r);
  boost::asio::awaitable<http_reply> console_route(std::string_view path, http_request& req);
  /// POST <publish.path><destination>, for a token or a session with one of publish.roles.
  boost::asio::awaitable<http_reply> publish_route(std::string_view destination, http_request& req);
  /// A session of `req` logged in with one of `roles` (any role if there are none).
  boost::asio::awaitable<bool> logged_in_with(const http_request& req,
                                              const std::vector<std::string>& roles);

  const config::gateway_config& cfg_;
  gateway& gateway_;
  messaging::channel& channel_;
  const metrics& metrics_;
  const bridge::bridge& bridge_;
  services::session_store& sessions_;
  worker_pool& workers_;
  std::shared_ptr<spdlog::logger> log_;
  json_api json_;
  console console_;
  publish_api publish_;
  std::string crossdomain_;
  std::string cookie_attributes_;  ///< "; Path=/; HttpOnly; SameSite=Lax[; Secure]"
  std::string cors_headers_;       ///< cors.allow_headers, comma-separated
  std::atomic<bool> draining_{false};
  std::atomic<bool> crossdomain_hint_logged_{false};
};

}  // namespace amfgate::server
