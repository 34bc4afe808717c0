// An upstream: an HTTP/JSON service that bridged AMF calls go to, over a pool of keep-alive
// HTTP/1.1 connections (TCP, TLS or a Unix socket) used by coroutines on the I/O threads.
//
// A call takes the newest idle connection of its own I/O thread, or opens one while fewer
// than max_connections are open, or takes another thread's idle one, or waits for one to
// come back; past max_inflight calls it is
// refused (Server.Busy). A pooled connection that the backend closed while it sat idle is
// found on first use and the request is sent once more on a new one; any other failure ends
// the call and discards its connection. After failure_threshold failures in a row the
// upstream is down: calls fail fast (Server.Upstream.Unavailable) for down_ms, then one call
// tries, and its success brings it back up. A call whose caller goes away (the client hung up)
// is no failure of the upstream: it is counted as cancelled, and its connection is closed if
// it was mid-answer.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amfgate/config.hpp"

namespace spdlog {
class logger;
}

namespace amfgate::bridge {

/// Where an upstream's url points.
struct endpoint {
  enum class kind { tcp, tls, unix_socket } how = kind::tcp;
  std::string host;       ///< tcp, tls: for the Host header, SNI and the certificate
  std::string port;       ///< tcp, tls
  std::string socket;     ///< unix_socket: its path
  std::string base_path;  ///< prefix of every target, ending with "/"
  /// Throws std::invalid_argument for a url that is none of the upstream forms.
  static endpoint parse(std::string_view url);
};

struct answer {
  unsigned status = 0;
  std::string body;
  std::string content_type;
};

/// How calls end, for /metrics.
enum class outcome : std::size_t {
  ok,
  fault,
  failed,
  timeout,
  busy,
  unavailable,
  cancelled,
  count_
};

class upstream {
 public:
  upstream(std::string name, const config::upstream_settings& s, std::size_t max_answer_bytes,
           std::shared_ptr<spdlog::logger> log);
  ~upstream();
  upstream(const upstream&) = delete;
  upstream& operator=(const upstream&) = delete;

  /// POSTs `body` (JSON) to the base path + `path`, answered before `deadline`. Throws
  /// services::fault: Server.Busy, Server.Upstream.Unavailable (down, or no connection),
  /// Server.Timeout, Server.Upstream.Failed (the connection broke, or an answer that is not
  /// HTTP or is larger than the limit); boost::system::system_error(operation_aborted) when
  /// the calling coroutine is cancelled. Any answer with a status is returned, the caller
  /// judges it (and says so with `judged`).
  boost::asio::awaitable<answer> post(std::string path, std::string body,
                                      std::chrono::steady_clock::time_point deadline);
  /// What the caller made of an answer that `post` returned: a 502/503/504 counts as a
  /// failure of the upstream; `o` is the call's outcome.
  void judged(outcome o, bool upstream_failed);

  const std::string& name() const noexcept { return name_; }
  const config::upstream_settings& settings() const noexcept { return settings_; }
  /// Its lines of /metrics (Prometheus text), labelled upstream="<name>".
  void render(std::string& out) const;
  /// A call that ended before `post` (a request too large, say), for /metrics.
  void count(outcome o);
  /// Closes the idle connections, and any given back from now on. Called before the I/O
  /// contexts their sockets belong to are destroyed.
  void close();

 private:
  struct connection;
  struct waiter;
  struct lease;
  /// Counts the call in flight and gets it a connection, in `l`.
  boost::asio::awaitable<void> acquire(lease& l, std::chrono::steady_clock::time_point deadline);
  boost::asio::awaitable<void> connect(lease& l, std::chrono::steady_clock::time_point deadline);
  /// Gives back what `l` holds: its connection to the pool (or to a waiter) if it is to be
  /// kept, else its place; and its place in flight.
  void release(lease& l);
  /// A call whose caller went away, for /metrics; a probe's slot is freed.
  void abandoned(const lease& l);
  /// Up or down: refused while down (a fast failure), else admitted; once down_ms have
  /// passed, one call is let in as the probe.
  enum class admission { refused, admitted, probe };
  admission admit();
  void failed();
  void succeeded();

  std::string name_;
  config::upstream_settings settings_;
  endpoint where_;
  std::size_t max_answer_bytes_;
  std::shared_ptr<spdlog::logger> log_;
  struct tls;
  std::unique_ptr<tls> tls_;

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<connection>> idle_;
  std::vector<std::shared_ptr<waiter>> waiters_;
  std::size_t open_ = 0, inflight_ = 0;
  bool closed_ = false;
  // The breaker, under mutex_.
  std::size_t failures_ = 0;
  std::chrono::steady_clock::time_point down_until_{};
  bool probing_ = false;

  static constexpr std::size_t bucket_count = 12;
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(outcome::count_)> calls_{};
  std::array<std::atomic<std::uint64_t>, bucket_count> latency_{};
  std::atomic<std::uint64_t> latency_count_{0}, latency_micros_{0}, connects_{0};
};

}  // namespace amfgate::bridge
