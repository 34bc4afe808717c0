// The store that several instances share Flex messaging through: each destination's log and
// each FlexClient's subscriptions with their cursors (docs/messaging.md, "Several instances").
// One instance alone needs none: the broker keeps both in memory. Redis's is
// server/redis_messaging.hpp; a store of another kind is one class like it, and one line
// where run() makes the store that `messaging.store` names.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "amfgate/messaging/broker.hpp"

namespace amfgate::messaging {

/// Where several instances share destinations and subscriptions. Calls throw
/// store_unavailable when it cannot be reached.
class shared_store {
 public:
  virtual ~shared_store() = default;
  /// Reads every destination's shared log into `m` (broker::mirror), from what is kept,
  /// and the notices of subscriptions changed elsewhere (broker::changed), on `ex`.
  virtual void start(boost::asio::any_io_executor ex, broker& b) = 0;
  /// Appends `m` to its destination's shared log, which numbers it.
  virtual boost::asio::awaitable<void> append(std::shared_ptr<const broker::stored> m) = 0;
  /// `append` from any thread, without waiting; the messages keep the order given.
  virtual void post(std::shared_ptr<const broker::stored> m) = 0;
  /// The subscriptions of `client` (and its idle expiry renewed).
  virtual boost::asio::awaitable<std::vector<broker::shared_subscription>> load(
      std::string client) = 0;
  /// Replaces the subscriptions of `client` (a kept one keeps its cursor) and tells the
  /// other instances.
  virtual boost::asio::awaitable<void> save(std::string client,
                                            std::vector<broker::shared_subscription> subs) = 0;
  /// Moves the cursors of subscriptions of `client` that still exist forward, never back.
  virtual boost::asio::awaitable<void> advance(
      std::string client, std::vector<std::pair<std::string, std::uint64_t>> cursors) = 0;
  /// Moves each cursor back to `from` where it is still at `to`.
  virtual boost::asio::awaitable<void> rewind(std::string client,
                                              std::vector<broker::moved> cursors) = 0;
};

}  // namespace amfgate::messaging
