// What a service publishes to Flex consumers through: the daemon's message broker
// (amfgate/messaging/broker.hpp) seen from a handler, with nothing of its destinations,
// subscriptions or stores. A handler finds it in call_context::publisher; a service that
// publishes on its own (a timer) takes it from registry::publisher() when it binds:
//
//   r.publisher().on_start([&p = r.publisher()](boost::asio::any_io_executor ex) {
//     boost::asio::co_spawn(ex, ticker(p), boost::asio::detached);
//   });
//   p.publish("prices", doc.string("IBM 142.10"), "stocks.ibm", {{"symbol", doc.string("IBM")}});
//
// Who may subscribe to or send to which subtopic of a destination, beyond its `send` and
// `subscribe` roles, is a hook (BlazeDS's allowSubscribe and allowSend), registered when the
// service binds, synchronous or a coroutine:
//
//   r.publisher().authorize("chat", [](const access_request& a) {
//     return a.user && a.subtopic == "rooms." + a.user->name;
//   });
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amf/value.hpp"
#include "amfgate/services/auth.hpp"

namespace amfgate::services {

/// What a Flex client asks of a destination, for a hook to decide (publisher::authorize).
struct access_request {
  enum class operation { subscribe, send };
  operation op = operation::subscribe;
  std::string_view destination;
  std::string_view subtopic;        ///< empty: the destination without a subtopic
  const principal* user = nullptr;  ///< null: not logged in
};

class publisher {
 public:
  using header = std::pair<std::string, amf::value>;

  virtual ~publisher() = default;
  /// Publishes `body` (copied before this returns) to the consumers of `destination` whose
  /// subtopic and selector select it; `headers` are what selectors see. Throws `fault` for
  /// an unknown destination or a subtopic it does not allow. Never blocks on a consumer, and
  /// may be called from any thread.
  virtual void publish(std::string_view destination, const amf::value& body,
                       std::string_view subtopic = {}, const std::vector<header>& headers = {}) = 0;
  /// Runs `task` on the daemon's I/O executor when it starts serving (a timer that
  /// publishes); tasks given after the start run at once.
  virtual void on_start(std::function<void(boost::asio::any_io_executor)> task) = 0;

  /// Decides, for `destination`, each subscribe (each subtopic of a MULTI_SUBSCRIBE) and
  /// each Producer's send, after the destination's roles allowed it: false refuses it with
  /// a fault (BlazeDS's 10557 and 10558), and so does a `fault` it throws. What the request
  /// views lives until the hook returns (a coroutine's, until it completes). One hook per
  /// destination, registered before the daemon starts; publish() does not ask it.
  using authorizer = std::function<boost::asio::awaitable<bool>(access_request)>;
  virtual void authorize(std::string_view destination, authorizer hook) = 0;
  /// The same, decided at once.
  void authorize(std::string_view destination, std::function<bool(const access_request&)> hook) {
    authorize(destination,
              [hook = std::move(hook)](access_request a) -> boost::asio::awaitable<bool> {
                co_return hook(a);
              });
  }
};

}  // namespace amfgate::services
