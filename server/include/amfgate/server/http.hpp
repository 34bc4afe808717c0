// The HTTP daemon (Boost.Beast over Asio): connections, limits, timeouts, the access log,
// graceful shutdown. What it serves is a routing function (`http_routes`): the daemon's is
// the router (router.hpp), which knows the application; this layer does not.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amfgate/config.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/server/metrics.hpp"
#include "amfgate/server/workers.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

/// `target` as the access log shows it: the session id a URL may carry (`;NAME=id`)
/// replaced by "<redacted>", control characters escaped, long parts cut. Formatted (by the
/// fmt formatter in http.cpp) straight into the log line.
struct loggable_target {
  std::string_view target;
  std::string_view cookie;
};

/// What an http_server serves.
struct http_routes {
  /// Answers a request: the coroutine, run on the connection's executor, that answers it. May
  /// throw as it picks one (a 500).
  std::function<boost::asio::awaitable<http_reply>(http_request&)> route;
  /// The drain begins (the first SIGTERM): no new long wait should start.
  std::function<void()> on_drain;
  /// Addresses to listen on besides `listen`: a request that comes in on the i-th says
  /// `http_request::listener` i + 1 (the main address: 0).
  std::vector<config::listen_settings> also;
};

/// Serves until SIGTERM/SIGINT: the first signal stops accepting and lets requests in flight
/// finish within the grace period; a second one exits at once. Owns the I/O threads and the
/// worker pool (`workers()`, for the gateway), so that no worker outlives the I/O context.
class http_server {
 public:
  http_server(const config::gateway_config& cfg, metrics& m, std::shared_ptr<spdlog::logger> log,
              std::shared_ptr<spdlog::logger> access);
  ~http_server();

  worker_pool& workers();
  /// The first I/O thread's executor (for what should run on the I/O threads: the Redis store,
  /// messaging's start-up hooks).
  boost::asio::any_io_executor executor();
  /// Binds (throws on failure), then serves `routes` on `cfg.threads` threads until stopped;
  /// then stops the worker pool, waiting for the handlers that run. Returns the exit status.
  int run(http_routes routes);
  /// The bound port, once `run` has bound it.
  std::uint16_t port() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace amfgate::server
