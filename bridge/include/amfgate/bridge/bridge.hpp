// The bridge: AMF calls answered by HTTP/JSON services (README, "The bridge").
//
// "bridge": {"UserService": "crm"} binds every method of UserService to the upstream "crm"
// (`upstreams.crm`); "Orders.place": "crm" binds one method. A call UserService.getUser(7)
// from any client (NetConnection, Flex RemoteObject, the JSON endpoint, the console) is a
// coroutine handler in the registry, so access rules, roles, deadlines, logins and limits
// apply as to a C++ service. It becomes
//
//   POST <url>UserService/getUser
//   {"args": [7], "user": {"name": "ann", "roles": ["staff"]} | null,
//    "session": "<pseudonym of the HTTP session>" | null, "client": "<address>",
//    "headers": {<the AMF headers named in forward_headers>}}
//
// and the answer {"result": ...} is the call's result; {"fault": {"code", "message",
// "detail"}} (with any status), another status, a body that is not JSON, a timeout or no
// connection are faults. A destination with "forward": "<upstream>" also POSTs what Flex
// Producers send to it (<url>_messages/<destination>), once, after it is published. One with
// "authorize": "<upstream>" asks it before each subscribe and each Producer's send:
//
//   POST <url>_authorize/<destination>
//   {"operation": "subscribe" | "send", "destination": "chat", "subtopic": "rooms.a" | null,
//    "user": {"name": "ann", "roles": [...]} | null}
//
// and {"result": true} allows it; false, a fault, or a failure refuses it.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <map>
#include <memory>
#include <string>

#include "amfgate/bridge/plain_json.hpp"
#include "amfgate/bridge/upstream.hpp"
#include "amfgate/config.hpp"
#include "amfgate/messaging/broker.hpp"
#include "amfgate/services/registry.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::bridge {

class bridge final : public messaging::forwarder {
 public:
  /// Checks every upstream's url: throws config::error naming the key of one it cannot use.
  explicit bridge(const config::gateway_config& cfg);
  ~bridge() override;

  /// Binds the settings' "bridge" targets in `r`, before it is frozen, and the "authorize"
  /// hooks of messaging destinations in its publisher.
  void bind(services::registry& r);
  /// Opens for calls: the upstreams' pools, logging to `log`; forwards run on `io`.
  void start(std::shared_ptr<spdlog::logger> log, boost::asio::any_io_executor io);
  /// Closes the pools' connections: their sockets belong to the server's I/O contexts, which
  /// must outlive them.
  void stop();
  /// The upstreams' lines of /metrics.
  void render(std::string& out) const;
  bool empty() const noexcept { return cfg_.upstreams.empty(); }

  // messaging::forwarder
  void forward(std::string_view upstream_name, const amf::flex::message& m,
               std::string_view subtopic, const services::principal* user) override;

 private:
  boost::asio::awaitable<amf::value> call(upstream& up, services::call_context& ctx,
                                          std::span<const amf::value> args);
  /// The hook of a destination with "authorize": whether the upstream allows `a`.
  boost::asio::awaitable<bool> authorize(upstream& up, services::access_request a);
  /// The "result" of what `up` answered to `path`; throws the fault it answered, or one
  /// for an answer that is neither. Counts what failed against the upstream.
  static ordered_json result_of(upstream& up, const answer& a, const std::string& path);
  /// The upstream `name`, once `start` made it.
  upstream& started(std::string_view name);
  boost::asio::awaitable<void> send_forward(upstream& up, std::atomic<std::size_t>& in_flight,
                                            std::string path, std::string body);

  const config::gateway_config& cfg_;
  std::shared_ptr<spdlog::logger> log_;
  boost::asio::any_io_executor io_;
  struct upstream_state {
    std::unique_ptr<upstream> up;
    std::atomic<std::size_t> forwarding{0};  ///< forwards in flight, up to its max_inflight
  };
  std::map<std::string, upstream_state, std::less<>> upstreams_;
  std::atomic<std::uint64_t> forwards_dropped_{0}, forwards_failed_{0}, forwards_sent_{0};
};

}  // namespace amfgate::bridge
