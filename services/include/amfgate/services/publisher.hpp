// What a service publishes to Flex consumers through: the daemon's message broker
// (amfgate/messaging/broker.hpp) seen from a handler, with nothing of its destinations,
// subscriptions or stores. A handler finds it in call_context::publisher; a service that
// publishes on its own (a timer) takes it from registry::publisher() when it binds:
//
//   r.publisher().on_start([&p = r.publisher()](boost::asio::any_io_executor ex) {
//     boost::asio::co_spawn(ex, ticker(p), boost::asio::detached);
//   });
//   p.publish("prices", doc.string("IBM 142.10"), "stocks.ibm", {{"symbol", doc.string("IBM")}});
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amf/value.hpp"

namespace amfgate::services {

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
};

}  // namespace amfgate::services
