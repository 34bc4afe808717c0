// Internal: one HTTP connection of the daemon, as one coroutine (connection.cpp), and what
// its connections share (the limits' counts, the memory budget, the routes).
#pragma once

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "amf/value.hpp"
#include "amfgate/config.hpp"
#include "amfgate/server/budget.hpp"
#include "amfgate/server/http.hpp"
#include "amfgate/server/metrics.hpp"

namespace amfgate::server {

using clock = std::chrono::steady_clock;

/// How a connection was let in.
enum class admission {
  full,         ///< counted against the limits, served
  health_only,  ///< over a connection limit, from loopback: /healthz only (a few are kept)
  refused       ///< over a connection limit: 503, closed
};

struct shared_state {
  shared_state(const config::gateway_config& c, metrics& m, std::shared_ptr<spdlog::logger> l,
               std::shared_ptr<spdlog::logger> a)
      : cfg(c), stats(m), log(std::move(l)), access(std::move(a)) {}
  const config::gateway_config& cfg;
  http_routes routes;  // set by run()
  metrics& stats;
  std::shared_ptr<spdlog::logger> log, access;
  std::atomic<bool> draining{false};
  memory_budget budget{cfg.limits.max_inflight_bytes};
  budget_resource arenas{budget, &amf::block_pool::shared()};

  std::mutex mutex;  // guards what follows
  std::list<std::weak_ptr<class connection>> connections;
  /// What one address has open. Each of its connections holds it (the map's nodes do not
  /// move), so that a request is counted with one atomic, not the lock and a lookup.
  struct client_load {
    std::size_t connections = 0;           ///< admitted in full: what the limit counts
    std::size_t holders = 0;               ///< its connections of any admission
    std::atomic<std::size_t> requests{0};  ///< in flight (without the lock)
  };
  std::unordered_map<std::string, client_load> clients;  ///< by address, while it has any
  std::size_t full_connections = 0, health_only = 0;
  static constexpr std::size_t health_slots = 4;

  /// How a connection from `address` is admitted, and the load of its address.
  std::pair<admission, client_load*> admit(const std::string& address, bool loopback) {
    std::lock_guard lock(mutex);
    const auto per_client = cfg.limits.max_connections_per_client;
    client_load& mine = clients[address];
    ++mine.holders;
    if (full_connections < cfg.limits.max_connections &&
        (per_client == 0 || mine.connections < per_client)) {
      ++full_connections;
      ++mine.connections;
      return {admission::full, &mine};
    }
    if (loopback && health_only < health_slots) {
      ++health_only;
      return {admission::health_only, &mine};
    }
    return {admission::refused, &mine};
  }
  /// The connection that `admit` gave `load` ends, with its requests.
  void leave(const std::string& address, admission a, client_load& load) {
    std::lock_guard lock(mutex);
    if (a == admission::health_only) --health_only;
    if (a == admission::full) {
      --full_connections;
      --load.connections;
    }
    if (--load.holders == 0) clients.erase(address);
  }
  /// A request begins, unless its address has limits.max_requests_per_client already.
  bool begin_request(client_load& load) const {
    const auto max = cfg.limits.max_requests_per_client;
    if (max == 0) return true;
    if (load.requests.fetch_add(1, std::memory_order_relaxed) < max) return true;
    load.requests.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  /// A parked poll's request counts again once it stops waiting, whatever the count: its
  /// answer is written.
  void resume_request(client_load& load) const {
    if (cfg.limits.max_requests_per_client) load.requests.fetch_add(1, std::memory_order_relaxed);
  }
  void end_request(client_load& load) const {
    if (cfg.limits.max_requests_per_client) load.requests.fetch_sub(1, std::memory_order_relaxed);
  }
};

// One deadline per connection, followed lazily by one timer: every step moves the deadline,
// and the timer is re-armed only when it fires before it (or the deadline moves earlier), so
// a request costs no timer system calls. At the deadline `on_expiry` runs.
class deadline {
 public:
  explicit deadline(boost::asio::any_io_executor ex) : timer_(std::move(ex)) {}

  template <class OnExpiry>
  void set(clock::time_point at, OnExpiry on_expiry) {
    at_ = at;
    if (armed_ && at_ >= timer_at_) return;  // the timer fires first, then follows
    arm(std::move(on_expiry));
  }
  /// No deadline for now (the timer stays armed and follows the next one).
  void clear() { at_ = clock::time_point::max(); }
  /// For good: the connection closes.
  void cancel() {
    clear();
    ++generation_;
    armed_ = false;
    timer_.cancel();
  }
  clock::time_point at() const { return at_; }

 private:
  template <class OnExpiry>
  void arm(OnExpiry on_expiry) {
    armed_ = true;
    timer_at_ = at_;
    const auto generation = ++generation_;
    timer_.expires_at(at_);  // a pending wait ends with an old generation: ignored
    timer_.async_wait(
        [this, generation, f = std::move(on_expiry)](boost::system::error_code ec) mutable {
          if (generation != generation_) return;
          armed_ = false;
          if (ec) return;
          if (clock::now() < at_) return arm(std::move(f));
          f();
        });
  }

  boost::asio::steady_timer timer_;
  clock::time_point at_ = clock::time_point::max(), timer_at_ = clock::time_point::max();
  std::uint64_t generation_ = 0;
  bool armed_ = false;
};

// Header fields of a connection's requests and responses (and the request's target) come
// from a buffer of its own, emptied as each request begins: no malloc per field while they
// fit. (Beast wants an allocator it can assign: std::pmr's cannot be.)
template <class T>
struct pool_allocator {
  using value_type = T;
  std::pmr::memory_resource* pool;

  pool_allocator(std::pmr::memory_resource* p) noexcept : pool(p) {}  // NOLINT: implicit
  template <class U>
  pool_allocator(const pool_allocator<U>& o) noexcept : pool(o.pool) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(pool->allocate(n * sizeof(T), alignof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { pool->deallocate(p, n * sizeof(T), alignof(T)); }
  friend bool operator==(const pool_allocator& a, const pool_allocator& b) {
    return a.pool == b.pool;
  }
};
using field_allocator = pool_allocator<char>;
using fields = boost::beast::http::basic_fields<field_allocator>;

// A request's body, in a string from the thread's body_pool once its header is read (not
// before: an idle connection holds none). The gateway gives it back when the request ends.
struct pooled_body {
  using value_type = std::string;
  static std::uint64_t size(const value_type& body) { return body.size(); }
  class reader : public boost::beast::http::string_body::reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>& h, value_type& body)
        : boost::beast::http::string_body::reader(h, body), body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, boost::system::error_code& ec);

   private:
    value_type& body_;
  };
  using writer = boost::beast::http::string_body::writer;
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  /// `listener`: which of the server's addresses accepted it (http_request::listener).
  connection(boost::asio::ip::tcp::socket&& socket, shared_state& st, unsigned listener = 0);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Serves the connection, on its socket's executor, until it closes.
  void start();
  /// At shutdown: a connection waiting for its next request closes after
  /// `shutdown_idle_wait` (at once when 0), unless its client closes it first or sends one
  /// more request (answered, then closed).
  void close_if_idle();

 private:
  using request = boost::beast::http::request<pooled_body, fields>;
  using response = boost::beast::http::response<boost::beast::http::string_body, fields>;
  using parser = boost::beast::http::request_parser<pooled_body, field_allocator>;

  /// Why a connection closes, when not by its client or an error of the socket.
  enum class closing {
    no,         ///< not (yet)
    timed_out,  ///< a deadline passed (header, body, idle, write)
    hung_up     ///< the client went away while its request waited (the hang-up watch)
  };
  /// What the connection waits for, and so what a deadline or a drain does to it.
  enum class phase { idle, reading, handling, writing, streaming, closed };

  boost::asio::awaitable<void> serve();
  /// Reads the next request's header: false when the connection is over (answered or not).
  boost::asio::awaitable<bool> read_header(bool first);
  /// Why the request just read cannot be served, as an answer that closes: framing two parsers
  /// could read differently, a health-only connection asked for something else, a body over
  /// the memory budget. None: it may be read and served.
  std::optional<http_reply> refusal();
  /// Reads the body (after `100 Continue`, if the client waits for one): false when the
  /// connection is over.
  boost::asio::awaitable<bool> read_body();
  /// What a read that failed with `ec` ends in: nothing (closed), or the answer that says why.
  std::optional<http_reply> read_failed(boost::system::error_code ec, bool nothing_came);
  /// The request as the router sees it: views into `request_`, which keeps the fields.
  void prepare_request();
  /// The router's answer to `in_` (500 for an exception). Throws operation_aborted when the
  /// client hung up.
  boost::asio::awaitable<http_reply> route();
  /// Whether the connection may take another request after this one's answer.
  bool keep_alive() const { return request_.keep_alive() && !st_.draining; }
  /// Writes `out`: whether the connection goes on to another request.
  boost::asio::awaitable<bool> respond(http_reply out, bool keep_alive);
  /// A streamed answer: the headers, then each piece as a chunk as it comes, until the
  /// stream ends or the client goes away.
  boost::asio::awaitable<void> write_stream(http_reply out);
  /// The answer to an error that ends the connection.
  static http_reply error_reply(unsigned status, std::string body,
                                std::chrono::seconds retry_after = {});
  /// One line of the access log, and the request in the metrics.
  void log_request(const http_reply& out, std::size_t bytes_out, std::size_t pieces);

  // While a request waits for a worker or a coroutine, or a stream is open, a client that
  // closes its connection cancels it (`hangup_`). Readable while handling means the end of the
  // stream, or a pipelined request (which stops the watch: its bytes stay for the next read).
  void watch_for_hangup();
  void stop_watching();

  /// Takes `bytes` from the budget of requests in flight; the 503 to answer when it is spent.
  std::optional<http_reply> charge(std::size_t bytes);
  void release_memory();
  void expire_in(clock::duration d);
  void drain_idle();
  void close();

  boost::beast::tcp_stream stream_;
  deadline deadline_;
  shared_state& st_;
  unsigned listener_;
  std::string address_, client_;  // "address", "address:port"
  admission admission_ = admission::refused;
  shared_state::client_load* load_ = nullptr;  ///< its address's, from `admit`
  phase phase_ = phase::reading;
  closing closing_ = closing::no;
  bool watching_hangup_ = false;
  boost::asio::cancellation_signal hangup_;
  boost::beast::flat_buffer buffer_;
  // Before all that allocates from it. Fields past the buffer come from the heap, given back
  // as the next request begins.
  std::array<std::byte, 1024> fields_buffer_;
  std::pmr::monotonic_buffer_resource fields_memory_{fields_buffer_.data(), fields_buffer_.size()};
  std::optional<parser> parser_;
  request request_{std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_)};
  std::optional<response> response_;  ///< being written
  http_request in_;                   ///< views into request_, and its body
  std::size_t bytes_in_ = 0;
  std::size_t charged_ = 0;  ///< held of the budget of requests in flight
  clock::time_point started_ = clock::now();
  std::list<std::weak_ptr<connection>>::iterator self_;
};

}  // namespace amfgate::server
