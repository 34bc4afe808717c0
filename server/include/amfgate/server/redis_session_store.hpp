// Sessions in Redis, shared by every instance behind a balancer: a login made through one
// instance is honoured by the others, and a logout anywhere ends it everywhere.
//
// Each session is one key, `<prefix><id>`, holding JSON, with an expiry equal to the idle
// timeout that every use renews (GETEX), on one `redis_client` connection. When Redis cannot
// be reached every call throws `store_unavailable`. The synchronous calls (tests, tools, the
// check at start) run the same commands and wait for them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amfgate/server/redis_client.hpp"
#include "amfgate/services/session.hpp"

namespace amfgate::server {

class redis_session_store : public services::session_store {
 public:
  explicit redis_session_store(redis_options options);
  ~redis_session_store() override;

  std::optional<services::session> find(const std::string& id) override;
  services::session create() override;
  void save(const services::session& s) override;
  void remove(const std::string& id) override;
  /// Counts the keys under the prefix (SCAN): for metrics, not for every request.
  std::size_t size() override;

  boost::asio::awaitable<std::optional<services::session>> async_find(std::string id) override;
  boost::asio::awaitable<services::session> async_create() override;
  boost::asio::awaitable<void> async_save(services::session s) override;
  boost::asio::awaitable<void> async_remove(std::string id) override;
  boost::asio::awaitable<std::size_t> async_size() override;

  /// One round trip (PING); throws store_unavailable.
  void ping();

  /// Moves the store from its own thread onto a strand of `executor` (the server's I/O
  /// context) and ends that thread; the connection is made again there. Call once, with
  /// nothing in flight, before `executor` runs requests. Afterwards, a synchronous call must
  /// not be made from a thread that `executor` needs to answer it; and the store must be
  /// destroyed before the I/O context (after it has stopped).
  void attach(boost::asio::any_io_executor executor);

  /// "redis host:port".
  std::string where() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A session as the JSON the Redis store keeps (also for tools that read the keys).
std::string session_to_json(const services::session& s);
services::session session_from_json(const std::string& id, const std::string& json);

}  // namespace amfgate::server
