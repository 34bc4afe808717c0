// The gateway: one AMF request body in, one AMF response body out. No sockets here, so it is
// tested directly (on an io_context of the test's); the HTTP layer (http.hpp) feeds it.
//
// `handle` is a coroutine that runs on the connection's executor. It runs the messages of a
// packet in order: inline handlers at once, pool handlers on the worker pool, coroutine
// handlers on the connection's executor, each against its deadline; password checks go to
// the pool too and the session store is awaited, so the I/O thread never waits.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "amf/flex.hpp"
#include "amfgate/config.hpp"
#include "amfgate/messaging/channel.hpp"
#include "amfgate/server/budget.hpp"
#include "amfgate/server/http_message.hpp"
#include "amfgate/server/metrics.hpp"
#include "amfgate/server/workers.hpp"
#include "amfgate/services/login_limiter.hpp"
#include "amfgate/services/registry.hpp"
#include "amfgate/services/session.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::server {

/// What the HTTP layer knows of a request, and what the gateway tells it back.
struct exchange {
  std::string client_address;  ///< "address:port"
  std::string session_id;      ///< from the cookie or the URL; empty if none
  /// Where the request's arenas take memory (one that counts it against
  /// limits.max_inflight_bytes and throws `over_budget`); null: the shared block pool.
  std::pmr::memory_resource* memory = nullptr;
  /// Called (once or more) before the request first waits for a worker or a coroutine:
  /// the HTTP layer then watches for the client going away.
  std::function<void()> on_wait;
  void waiting() {
    if (on_wait) std::exchange(on_wait, nullptr)();
  }
  /// Called with true when a poll parks and with false when it stops waiting: a parked poll
  /// holds no place in limits.max_requests_per_client (64 long polls from one address, a
  /// NAT, must not make its every other request a 503).
  std::function<void(bool parked)> on_park;

  /// The answer as the HTTP layer writes it. The gateway sets its status, content type and
  /// body, the counts of messages and faults, how long a poll parked, what runs if it is not
  /// written (a poll's cursors go back), and Retry-After with a 503; headers that were there
  /// (CORS) stay.
  http_reply reply;
  // Set by the gateway, for the router's cookie:
  std::string new_session_id;  ///< a session was created: send the cookie
  bool session_ended = false;  ///< logout: clear the cookie
};

class gateway {
 public:
  /// Flex messaging's commands and AsyncMessages go to `channel`.
  gateway(const config::gateway_config& cfg, services::registry& services,
          messaging::channel& channel, services::session_store& sessions,
          const services::authenticator& auth, worker_pool& workers, metrics& stats,
          std::shared_ptr<spdlog::logger> log);

  /// Decodes `body`, runs every message, encodes the answers into `ex.body`. A body that
  /// does not decode is answered 400 with the codec's reason and byte offset; a request that
  /// finds the worker pool's queue full before any of its messages ran, 503 with
  /// `ex.retry_after`. Cancelling the coroutine (the client went away) cancels the call in
  /// progress and ends with `operation_aborted`. `ex` must outlive the coroutine.
  boost::asio::awaitable<void> handle(std::string body, exchange& ex);

 private:
  struct request;
  using request_ptr = std::shared_ptr<request>;
  boost::asio::awaitable<void> run_messages(request_ptr rq);
  boost::asio::awaitable<amf::value> call_netconnection(request_ptr rq, const amf::body& b,
                                                        bool& fault);
  boost::asio::awaitable<amf::value> flex_message(request_ptr rq, const amf::value& v, bool& fault);
  boost::asio::awaitable<amf::value> flex_command(request_ptr rq, const amf::flex::message& in,
                                                  amf::flex::message& ack, bool& small);
  boost::asio::awaitable<amf::value> flex_login(request_ptr rq, const amf::flex::message& in);
  boost::asio::awaitable<amf::value> flex_logout(request_ptr rq);
  /// Logout: the session ends, and its FlexClient's subscriptions with it.
  boost::asio::awaitable<void> end_login(request_ptr rq);
  /// The FlexClient id (DSId) and small-message negotiation of a ping or login.
  void client_headers(request& rq, const amf::flex::message& in, amf::flex::message& ack,
                      bool& small);
  boost::asio::awaitable<amf::value> invoke(request_ptr rq, std::string_view service,
                                            std::string_view method,
                                            std::span<const amf::value> args);
  struct pool_call;
  /// A pool handler's call, in `call`'s context, on the worker pool.
  boost::asio::awaitable<amf::value> run_on_pool(request_ptr rq, std::shared_ptr<pool_call> call,
                                                 const services::method& m,
                                                 std::span<const amf::value> args);
  void check_access(request& rq, std::string_view service, std::string_view method);
  /// Checks a password (one per request), and on success moves the request to a new session
  /// logged in as `user` (true); otherwise `login_refused` (or `store_error`) says why not.
  boost::asio::awaitable<bool> login(request_ptr rq, std::string_view user,
                                     std::string_view password);
  /// NetConnection.setCredentials: what a request's Credentials header authenticates it as.
  /// An empty user id logs out; the session's own user and password keep the session, with
  /// no second password check; another pair is a new login (the principal replaced, the
  /// session rotated) or, failing, leaves the request and the session anonymous.
  boost::asio::awaitable<void> apply_credentials(request_ptr rq);
  /// `user` and `password` as what the request is authenticated as: the session's own login
  /// (no second password check), or a new one; refused (false), the request and the session
  /// hold no principal.
  boost::asio::awaitable<bool> authenticate(request_ptr rq, std::string_view user,
                                            std::string_view password);
  /// A refused login: the request, and the session it came with, hold no principal.
  static void drop_login(request& rq);

  const config::gateway_config& cfg_;
  services::registry& services_;
  messaging::channel& channel_;
  services::session_store& sessions_;
  const services::authenticator& auth_;
  worker_pool& workers_;
  metrics& stats_;
  services::login_limiter limiter_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace amfgate::server
