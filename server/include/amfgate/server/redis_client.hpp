// One Redis connection for the daemon: hiredis's asynchronous context driven by Asio, first
// on a thread of the client's own, then (`attach`) on the daemon's I/O threads, so that no
// thread ever waits for Redis. Commands are pipelined on the connection, in the order they
// are given, and each reply is handed back to the awaiting coroutine's executor.
//
// A connect or command timeout drops the connection (its commands fail); when Redis cannot be
// reached every command throws `store_unavailable`, and for a second after a failure commands
// fail at once instead of each waiting for its own timeout. A connection that Redis closes
// while idle (a restart) is simply made again by the next command.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace amfgate::server {

struct redis_options {
  std::string host = "127.0.0.1";
  unsigned port = 6379;
  std::string password;
  unsigned db = 0;
  std::string key_prefix = "amfgate:session:";
  std::chrono::milliseconds connect_timeout{500};
  std::chrono::milliseconds command_timeout{500};
  std::chrono::milliseconds idle_timeout{30 * 60'000};  ///< the session keys' expiry
  /// Told when Redis goes from reachable to not (false, with the reason) and back (true).
  std::function<void(bool reachable, const std::string& detail)> on_state_change;
};

/// A reply, copied out of hiredis's. An error reply is never one: it throws.
struct redis_value {
  enum class kind { nil, string, integer, array, status, other };
  kind type = kind::nil;
  std::string str;  ///< a string's or a status's text
  long long integer = 0;
  std::vector<redis_value> elements;
};

class redis_client {
 public:
  explicit redis_client(redis_options options);
  ~redis_client();
  redis_client(const redis_client&) = delete;
  redis_client& operator=(const redis_client&) = delete;

  /// Sends `args`; resumes the awaiting coroutine on its own executor with the reply. Throws
  /// store_unavailable, with the reason (Redis's error reply included).
  boost::asio::awaitable<redis_value> command(std::vector<std::string> args);

  /// Runs `a` on the client's strand and waits for it: for tests, tools and the checks at
  /// start, never from a thread that the strand's executor needs to answer it.
  template <class T>
  T wait(boost::asio::awaitable<T> a) {
    return boost::asio::co_spawn(strand(), std::move(a), boost::asio::use_future).get();
  }

  /// Moves the client from its own thread onto a strand of `executor` (the server's I/O
  /// context) and ends that thread; the connection is made again there. Call once, with
  /// nothing in flight, before `executor` runs requests. The client must then be destroyed
  /// before the I/O context (after it has stopped).
  void attach(boost::asio::any_io_executor executor);

  const redis_options& options() const;
  /// "redis host:port".
  std::string where() const;
  boost::asio::strand<boost::asio::any_io_executor> strand() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace amfgate::server
