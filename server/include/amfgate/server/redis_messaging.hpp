// Flex messaging shared by every instance through Redis (messaging.store "redis"): no
// sticky sessions behind a balancer. Keys, under messaging.redis_key_prefix:
//
//   log:<destination>   a Redis Stream: the destination's log. Entries are numbered 0-1,
//                       0-2 ... by XADD's "0-*" (the sequence is the message's index, the
//                       same on every instance) and trimmed to the retention's max_messages.
//   client:<DSId>       a hash: "s:<clientId>" the subscription (destination, subtopics and
//                       selectors) as JSON, "c:<clientId>" its cursor; expires after
//                       client_idle_timeout_ms without a poll.
//   changes             a Stream of DSIds whose subscriptions changed: an instance holding a
//                       poll or a stream of one of them reads its subscriptions again.
//
// Every instance reads every log (XREAD BLOCK, on a connection of its own) into its in-memory
// mirror, which wakes the polls and streams it holds. A poll reads the client's subscriptions,
// reads on from their cursors in the mirror, and moves the cursors forward before it answers:
// an instance that dies leaves them where its last answered poll put them, and the client's
// next poll, through any instance, reads on from there.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "amfgate/messaging/shared_store.hpp"
#include "amfgate/server/redis_client.hpp"

namespace amfgate::server {

class redis_messaging : public messaging::shared_store {
 public:
  /// `connection`: where Redis is (its key_prefix is not used); `warn` is told of what failed
  /// without a caller to tell (a publish from a service, the log reader).
  redis_messaging(const redis_options& connection, config::messaging_settings settings,
                  std::string key_prefix, std::function<void(const std::string&)> warn);
  ~redis_messaging() override;

  /// Attaches the connections to `ex` and starts reading the logs into `m`.
  void start(boost::asio::any_io_executor ex, messaging::broker& m) override;
  boost::asio::awaitable<void> append(std::shared_ptr<const messaging::broker::stored> m) override;
  void post(std::shared_ptr<const messaging::broker::stored> m) override;
  boost::asio::awaitable<std::vector<messaging::broker::shared_subscription>> load(
      std::string client) override;
  boost::asio::awaitable<void> save(
      std::string client, std::vector<messaging::broker::shared_subscription> subs) override;
  boost::asio::awaitable<void> rewind(std::string client,
                                      std::vector<messaging::broker::moved> cursors) override;
  boost::asio::awaitable<void> advance(
      std::string client, std::vector<std::pair<std::string, std::uint64_t>> cursors) override;

  /// One round trip (PING) on the command connection; throws store_unavailable.
  void ping();

 private:
  boost::asio::awaitable<void> read(messaging::broker& m);
  /// The epoch the reader found (see read); empty before it looked.
  std::string epoch() const;

  config::messaging_settings cfg_;
  std::string prefix_;
  std::function<void(const std::string&)> warn_;
  redis_client commands_;  ///< appends, loads, saves: pipelined
  redis_client reader_;    ///< XREAD BLOCK, which holds its connection while it waits
  mutable std::mutex epoch_mutex_;
  std::string epoch_;
};

}  // namespace amfgate::server
