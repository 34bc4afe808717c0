// Sessions in Redis, shared by every instance behind a balancer: a login made through one
// instance is honoured by the others, and a logout anywhere ends it everywhere.
//
// Each session is one key, `<prefix><id>`, holding JSON, with an expiry equal to the idle
// timeout that every use renews (GETEX). Calls are synchronous (hiredis) with connect and
// command timeouts, over a pool of connections; the server runs requests on worker threads
// when its store is blocking, so the I/O threads never wait on Redis. When Redis cannot be
// reached every call throws `store_unavailable`, and for a second after a failure calls fail
// at once instead of each waiting for its own timeout.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "amfgate/services/session.hpp"

struct redisContext;

namespace amfgate::services {

struct redis_options {
  std::string host = "127.0.0.1";
  unsigned port = 6379;
  std::string password;
  unsigned db = 0;
  std::string key_prefix = "amfgate:session:";
  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds command_timeout{500};
  std::chrono::milliseconds idle_timeout{30 * 60'000};  ///< the keys' expiry
  /// Told when Redis goes from reachable to not (false, with the reason) and back (true).
  std::function<void(bool reachable, const std::string& detail)> on_state_change;
};

class redis_session_store : public session_store {
 public:
  explicit redis_session_store(redis_options options);
  ~redis_session_store() override;

  bool blocking() const noexcept override { return true; }
  std::optional<session> find(const std::string& id) override;
  session create() override;
  void save(const session& s) override;
  void remove(const std::string& id) override;
  /// Counts the keys under the prefix (SCAN): for metrics, not for every request.
  std::size_t size() override;

  /// One round trip (PING); throws store_unavailable.
  void ping();

  /// "redis host:port".
  std::string where() const;

 private:
  struct connection_deleter {
    void operator()(redisContext* c) const noexcept;
  };
  using connection = std::unique_ptr<redisContext, connection_deleter>;
  class reply;

  /// Runs one command on a pooled connection; throws store_unavailable.
  reply command(const std::vector<std::string>& args);
  /// A pooled connection (`pooled` true) or a new one.
  connection acquire(bool& pooled);
  void release(connection c);
  [[noreturn]] void failed(const std::string& why);

  redis_options opt_;
  std::mutex mutex_;
  std::vector<connection> idle_;
  bool down_ = false;
  std::string last_error_;
  std::chrono::steady_clock::time_point retry_at_{};
};

/// A session as the JSON the Redis store keeps (also for tools that read the keys).
std::string session_to_json(const session& s);
session session_from_json(const std::string& id, const std::string& json);

}  // namespace amfgate::services
