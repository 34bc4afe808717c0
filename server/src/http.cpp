#include "amfgate/server/http.hpp"

#include <spdlog/spdlog.h>

#include <sched.h>
#include <sys/socket.h>

#include <array>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <csignal>
#include <list>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "amfgate/server/budget.hpp"
#include "amfgate/services/quote.hpp"
#include "body_pool.hpp"
#include "log_sink.hpp"
#include "request_target.hpp"

// A request's method and target go into the access log escaped, written straight into the
// line's buffer: no string of their own per request.
namespace amfgate::server {
namespace {
struct escaped_text {
  std::string_view text;
  std::size_t max;
};
}  // namespace
}  // namespace amfgate::server

template <>
struct fmt::formatter<amfgate::server::escaped_text> : fmt::formatter<std::string_view> {
  auto format(const amfgate::server::escaped_text& e, fmt::format_context& ctx) const {
    return amfgate::services::escape_to(ctx.out(), e.text, e.max);
  }
};

template <>
struct fmt::formatter<amfgate::server::loggable_target> : fmt::formatter<std::string_view> {
  auto format(const amfgate::server::loggable_target& t, fmt::format_context& ctx) const {
    auto out = ctx.out();
    std::string_view rest = t.target;
    for (auto id = amfgate::server::param(rest, t.cookie); !id.empty();
         id = amfgate::server::param(rest, t.cookie)) {
      const auto at = static_cast<std::size_t>(id.data() - rest.data());
      out = amfgate::services::escape_to(out, rest.substr(0, at), 1024);
      for (const char c : std::string_view("<redacted>")) *out++ = c;
      rest.remove_prefix(at + id.size());
    }
    return amfgate::services::escape_to(out, rest, 1024);
  }
};

namespace amfgate::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// ------------------------------------------------------------------------- HTTP server

namespace {

using clock = std::chrono::steady_clock;

// Beast's operations allocate their state (and Asio its socket operations) with the
// handler's allocator, std::allocator unless it names one: the thread's recycled blocks
// instead, so that a request's reads and write reuse the last one's memory.
template <class Handler>
auto recycled(Handler&& h) {
  return net::bind_allocator(net::recycling_allocator<void>(), std::forward<Handler>(h));
}

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
using fields = http::basic_fields<field_allocator>;

// A request's body, in a string from the thread's body_pool once its header is read (not
// before: an idle connection holds none). The gateway gives it back when the request ends.
struct pooled_body {
  using value_type = std::string;
  static std::uint64_t size(const value_type& body) { return body.size(); }
  class reader : public http::string_body::reader {
   public:
    template <bool isRequest, class Fields>
    reader(http::header<isRequest, Fields>& h, value_type& body)
        : http::string_body::reader(h, body), body_(body) {}
    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      if (body_.capacity() <= std::string().capacity()) body_ = body_pool::take();
      http::string_body::reader::init(length, ec);
    }

   private:
    value_type& body_;
  };
  using writer = http::string_body::writer;
};
using request = http::request<pooled_body, fields>;
using response = http::response<http::string_body, fields>;

// A request whose framing two parsers could read differently (RFC 9112 6.1 and 6.3) is
// refused and its connection closed, so that no bytes behind it are read as a request of
// their own: a Transfer-Encoding other than exactly `chunked` (Beast would read no body), or
// one beside a Content-Length. HTTP/1.1 requires Host.
std::optional<std::pair<unsigned, std::string>> refuse_framing(const request& h) {
  using refusal = std::pair<unsigned, std::string>;
  if (h.version() >= 11 && h.find(http::field::host) == h.end()) {
    return refusal{400, "bad HTTP request: HTTP/1.1 requires a Host header"};
  }
  const auto te = h.find(http::field::transfer_encoding);
  if (te == h.end()) return std::nullopt;
  if (h.count(http::field::content_length) > 0) {
    return refusal{400, "bad HTTP request: both Transfer-Encoding and Content-Length"};
  }
  if (h.count(http::field::transfer_encoding) > 1 || !beast::iequals(te->value(), "chunked")) {
    return refusal{501, "Transfer-Encoding " + services::quoted(te->value()) +
                            " is not supported: send chunked, or a Content-Length"};
  }
  return std::nullopt;
}

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
  router* routes = nullptr;  // set by run()
  metrics& stats;
  std::shared_ptr<spdlog::logger> log, access;
  std::atomic<bool> draining{false};
  memory_budget budget{cfg.limits.max_inflight_bytes};
  budget_resource arenas{budget, &amf::block_pool::shared()};

  std::mutex mutex;  // guards what follows
  std::list<std::weak_ptr<class connection>> connections;
  struct client_load {
    std::size_t connections = 0, requests = 0;
  };
  std::unordered_map<std::string, client_load> clients;  ///< by address, while it has any
  std::size_t full_connections = 0, health_only = 0;
  static constexpr std::size_t health_slots = 4;

  admission admit(const std::string& address, bool loopback) {
    std::lock_guard lock(mutex);
    const auto per_client = cfg.limits.max_connections_per_client;
    auto it = clients.find(address);
    const std::size_t mine = it == clients.end() ? 0 : it->second.connections;
    if (full_connections < cfg.limits.max_connections && (per_client == 0 || mine < per_client)) {
      ++full_connections;
      ++clients[address].connections;
      return admission::full;
    }
    if (loopback && health_only < health_slots) {
      ++health_only;
      return admission::health_only;
    }
    return admission::refused;
  }
  void leave(const std::string& address, admission a) {
    std::lock_guard lock(mutex);
    if (a == admission::health_only) --health_only;
    if (a != admission::full) return;
    --full_connections;
    auto it = clients.find(address);
    if (--it->second.connections == 0 && it->second.requests == 0) clients.erase(it);
  }
  /// A request of `address` begins, unless it has limits.max_requests_per_client already.
  /// With no such limit (0), nothing is counted: no lock on every request.
  bool begin_request(const std::string& address) {
    const auto max = cfg.limits.max_requests_per_client;
    if (max == 0) return true;
    std::lock_guard lock(mutex);
    auto& c = clients[address];
    if (c.requests >= max) return false;
    ++c.requests;
    return true;
  }
  /// A parked poll's request counts again once it stops waiting, whatever the count: its
  /// answer is written.
  void resume_request(const std::string& address) {
    if (cfg.limits.max_requests_per_client == 0) return;
    std::lock_guard lock(mutex);
    ++clients[address].requests;
  }
  void end_request(const std::string& address) {
    if (cfg.limits.max_requests_per_client == 0) return;
    std::lock_guard lock(mutex);
    auto it = clients.find(address);
    if (--it->second.requests == 0 && it->second.connections == 0) clients.erase(it);
  }
};

// One deadline per connection, followed lazily by one timer: every step moves the deadline,
// and the timer is re-armed only when it fires before it (or the deadline moves earlier), so
// a request costs no timer system calls. At the deadline `on_expiry` runs.
class deadline {
 public:
  explicit deadline(net::any_io_executor ex) : timer_(std::move(ex)) {}

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
    timer_.async_wait([this, generation, f = std::move(on_expiry)](beast::error_code ec) mutable {
      if (generation != generation_) return;
      armed_ = false;
      if (ec) return;
      if (clock::now() < at_) return arm(std::move(f));
      f();
    });
  }

  net::steady_timer timer_;
  clock::time_point at_ = clock::time_point::max(), timer_at_ = clock::time_point::max();
  std::uint64_t generation_ = 0;
  bool armed_ = false;
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  /// Where a connection is: what it waits for, and so what a deadline or a drain does to it.
  enum class phase {
    idle,       ///< waiting for a request's headers (the first, or the next on keep-alive)
    reading,    ///< a request has begun: its headers or body are arriving
    handling,   ///< the gateway runs it
    writing,    ///< the reply goes out
    streaming,  ///< a streamed reply goes out, for as long as it lasts
    closed
  };

  connection(tcp::socket&& socket, shared_state& st)
      : stream_(std::move(socket)), deadline_(stream_.get_executor()), st_(st) {
    beast::error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    address_ = ec ? "unknown" : ep.address().to_string();
    client_ = ec ? "unknown" : address_ + ":" + std::to_string(ep.port());
    admission_ = st_.admit(address_, !ec && ep.address().is_loopback());
    st_.stats.connection_opened();
  }
  ~connection() {
    release_memory();
    st_.leave(address_, admission_);
    st_.stats.connection_closed();
  }

  void start() {
    {
      std::lock_guard lock(st_.mutex);
      st_.connections.push_back(weak_from_this());
      self_ = std::prev(st_.connections.end());
    }
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->admission_ == admission::refused) {
        self->st_.log->warn(
            "{}: connection refused: too many connections (limits.max_connections "
            "{}, per client {})",
            self->client_, self->st_.cfg.limits.max_connections,
            self->st_.cfg.limits.max_connections_per_client);
        self->fail(503, "too many connections; retry later\n", std::chrono::seconds(1));
      } else {
        self->read_header();
      }
    });
  }

  /// At shutdown: a connection waiting for its next request closes after
  /// `shutdown_idle_wait` (at once when 0), unless its client closes it first or sends one
  /// more request (answered, then closed).
  void close_if_idle() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ == phase::idle) self->drain_idle();
    });
  }

 private:
  void expire_in(clock::duration d) { expire_at(clock::now() + d); }
  void expire_at(clock::time_point at) {
    deadline_.set(at, [self = shared_from_this()] {
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
      self->stream_.socket().close(ignored);
    });
  }

  // Draining and idle: close now, or give the client `shutdown_idle_wait` to close first (a
  // balancer may be sending on this connection right now; closing under it loses that call).
  void drain_idle() {
    const auto wait = st_.cfg.shutdown_idle_wait;
    if (wait <= clock::duration::zero()) return stream_.socket().close();
    if (clock::now() + wait < deadline_.at()) expire_in(wait);
  }

  void read_header() {
    if (st_.draining && st_.cfg.shutdown_idle_wait <= clock::duration::zero()) return close();
    // The last exchange is over: nothing uses its fields now.
    parser_.reset();
    request_ =
        request(std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_));
    fields_memory_.release();
    parser_.emplace(std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_));
    parser_->body_limit(st_.cfg.limits.max_body_bytes);
    parser_->header_limit(static_cast<std::uint32_t>(st_.cfg.limits.max_header_bytes));
    expire_in(first_ ? st_.cfg.limits.header_timeout : st_.cfg.limits.idle_timeout);
    phase_ = phase::idle;
    // Answered with keep-alive just before the drain began: the client may send again.
    if (st_.draining) drain_idle();
    http::async_read_header(
        stream_, buffer_, *parser_,
        recycled(beast::bind_front_handler(&connection::on_header, shared_from_this())));
  }

  void on_header(beast::error_code ec, std::size_t) {
    const bool nothing_came = phase_ == phase::idle && buffer_.size() == 0;
    phase_ = phase::reading;
    if (ec) return read_failed(ec, nothing_came);
    started_ = clock::now();
    if (auto refusal = refuse_framing(parser_->get())) {
      st_.log->info("{}: {}", client_, refusal->second);
      return fail(refusal->first, refusal->second + "\n");
    }
    if (admission_ == admission::health_only &&
        path_of(parser_->get().target()) != std::string_view("/healthz")) {
      return fail(503, "too many connections: this one is kept for /healthz\n",
                  std::chrono::seconds(1));
    }
    // Bodies are held in memory: they count against the budget of requests in flight.
    if (const auto length = parser_->content_length(); length && !charge(*length)) return;
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue") &&
        !parser_->is_done() && !body_in_buffer()) {
      return continue_then_read();
    }
    // A request without a body (GET, or Content-Length: 0) is complete: the parser takes no
    // more bytes ("stale parser").
    if (parser_->is_done()) return on_read(ec, 0);
    // Most AMF bodies arrive with their headers: parse them from the buffer, with no second
    // read (and no timer) on the way.
    if (body_in_buffer()) {
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec || parser_->is_done()) return on_read(ec, used);
    }
    read_body();
  }

  bool body_in_buffer() const {
    const auto length = parser_->content_length();
    return length && buffer_.size() >= *length;
  }

  // `Expect: 100-continue` (curl sends it for bodies over 1 MiB, then waits a second for it).
  void continue_then_read() {
    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
    expire_in(st_.cfg.limits.read_timeout);
    net::async_write(stream_, net::buffer(go_on.data(), go_on.size()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->close();
                       self->read_body();
                     });
  }

  void read_body() {
    // A slow body is bounded by the read timeout from here.
    expire_in(st_.cfg.limits.read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     recycled(beast::bind_front_handler(&connection::on_read, shared_from_this())));
  }

  // `nothing_came`: no byte of a request had come (a keep-alive connection timing out is normal).
  void read_failed(beast::error_code ec, bool nothing_came = false) {
    if (timed_out_) {
      if (!nothing_came) st_.log->info("{}: request not received in time, closing", client_);
      return close();
    }
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted ||
        ec == net::error::bad_descriptor) {
      return close();
    }
    if (ec == http::error::body_limit) {
      return fail(413, "request body larger than " + std::to_string(st_.cfg.limits.max_body_bytes) +
                           " bytes\n");
    }
    if (ec == http::error::header_limit) return fail(431, "request headers too large\n");
    st_.log->info("{}: bad HTTP request: {}", client_, ec.message());
    fail(400, "bad HTTP request: " + ec.message() + "\n");
  }

  // Takes `bytes` from the budget of requests in flight, or answers 503 and closes.
  bool charge(std::size_t bytes) {
    if (st_.budget.try_take(bytes)) {
      charged_ += bytes;
      return true;
    }
    st_.stats.busy_refused();
    st_.log->warn("{}: 503: requests in flight hold {} of {} bytes (limits.max_inflight_bytes)",
                  client_, st_.budget.used(), st_.budget.max());
    fail(503, "server busy: requests in flight hold the memory they may; retry later\n",
         std::chrono::seconds(1));
    return false;
  }
  void release_memory() { st_.budget.give(std::exchange(charged_, 0)); }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec) return read_failed(ec);
    if (!parser_->content_length() && !charge(parser_->get().body().size())) return;  // chunked
    if (!st_.begin_request(address_)) {
      st_.stats.busy_refused();
      request_ = parser_->release();
      bytes_in_ = request_.body().size();
      http_reply r;
      r.status = 503;
      r.body = "too many requests in flight from your address; retry later\n";
      r.headers.emplace_back("Retry-After", "1");
      return respond(std::move(r));
    }
    request_ = parser_->release();
    in_.method = request_.method_string();
    in_.target = request_.target();
    in_.content_type = request_[http::field::content_type];
    in_.cookie = request_[http::field::cookie];
    in_.origin = request_[http::field::origin];
    in_.user_agent = request_[http::field::user_agent];
    in_.version = request_.version();
    bytes_in_ = request_.body().size();
    in_.body = std::move(request_.body());
    in_.client = client_;
    in_.memory = &st_.arenas;
    in_.on_wait = [this] { watch_for_hangup(); };  // runs within route(): `this` lives
    in_.on_park = [this](bool parked) {
      parked ? st_.end_request(address_) : st_.resume_request(address_);
    };
    phase_ = phase::handling;
    // Handlers have deadlines of their own (limits.call_timeout_ms): the connection waits.
    deadline_.clear();
    net::co_spawn(
        stream_.get_executor(), route(),
        net::bind_cancellation_slot(
            hangup_.slot(), [self = shared_from_this()](std::exception_ptr e, http_reply out) {
              self->st_.end_request(self->address_);
              if (self->watching_hangup_) {
                self->watching_hangup_ = false;
                beast::error_code ignored;
                self->stream_.socket().cancel(ignored);  // ends the hang-up watch
              }
              if (e) return self->close();  // the client went away
              self->respond(std::move(out));
            }));
  }

  net::awaitable<http_reply> route() {
    try {
      co_return co_await st_.routes->route(in_);
    } catch (const boost::system::system_error& e) {
      if (e.code() == net::error::operation_aborted && hung_up_) throw;
      st_.log->error("{}: {} {}: {}", client_, in_.method, in_.target, e.what());
    } catch (const std::exception& e) {
      st_.log->error("{}: {} {}: {}", client_, in_.method, in_.target, e.what());
    }
    http_reply out;
    out.status = 500;
    out.body = "internal error\n";
    co_return out;
  }

  // While a request waits for a worker or a coroutine: a client that closes its connection
  // cancels it. Readable while handling means the end of the stream, or a pipelined request
  // (which stops the watch: its bytes stay for the next read).
  void watch_for_hangup() {
    watching_hangup_ = true;
    stream_.socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
          if (ec || (self->phase_ != phase::handling && self->phase_ != phase::streaming)) {
            return;
          }
          char c;
          const auto n =
              ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            self->hung_up_ = true;
            self->hangup_.emit(net::cancellation_type::terminal);
          }
        });
  }

  void respond(http_reply out) {
    const auto& req = request_;
    respond(std::move(out), req.version(), req.keep_alive() && !st_.draining,
            req.method() == http::verb::head, req.method_string(), req.target(), bytes_in_);
  }

  // method and target are only logged, before this returns.
  void respond(http_reply out, unsigned version, bool keep_alive, bool head,
               std::string_view method, std::string_view target, std::size_t bytes_in) {
    if (out.stream) return stream(std::move(out));
    phase_ = phase::writing;
    response_.emplace(std::piecewise_construct, std::make_tuple(),
                      std::make_tuple(&fields_memory_));
    auto* res = &*response_;
    res->result(static_cast<http::status>(out.status));
    res->version(version);
    res->set(http::field::server, "amfgate");
    if (!out.content_type.empty()) res->set(http::field::content_type, out.content_type);
    for (auto& [k, v] : out.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    const std::size_t bytes_out = out.body.size();
    st_.budget.take(bytes_out);  // it exists already; held until written
    charged_ += bytes_out;
    res->body() = head ? std::string() : std::move(out.body);
    res->prepare_payload();
    if (head) res->content_length(bytes_out);

    const double seconds = std::chrono::duration<double>(clock::now() - started_).count();
    st_.stats.request(out.status, seconds, bytes_in, bytes_out);
    st_.stats.messages(out.messages, out.faults);
    if (st_.cfg.log.access) {
      // A poll that parked says how long: its time is mostly that wait.
      std::string parked;
      if (out.parked_ms >= 0) parked = fmt::format(" parked={:.0f}ms", out.parked_ms);
      st_.access->info("{} \"{} {}\" {} in={} out={} messages={} faults={} {:.3f}ms{}", client_,
                       escaped_text{method, 32}, loggable_target{target, st_.cfg.sessions.cookie},
                       out.status, bytes_in, bytes_out, out.messages, out.faults, seconds * 1000,
                       parked);
    }
    expire_in(st_.cfg.limits.read_timeout);
    unwritten_ = std::move(out.unwritten);
    http::async_write(
        stream_, *res,
        recycled([self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
          body_pool::give(std::move(self->response_->body()));
          self->response_.reset();
          self->release_memory();
          if (auto lost = std::exchange(self->unwritten_, nullptr); lost && ec) lost();
          if (ec || !keep_alive) return self->close();
          self->first_ = false;
          self->read_header();
        }));
  }

  // A streamed answer: the headers at once, then each piece as a chunk as it comes, until
  // the stream ends (the last chunk, then close) or the client goes away (a failed write, or
  // the hang-up watch). A write that cannot finish within limits.read_timeout ends it too.
  void stream(http_reply out) {
    phase_ = phase::streaming;
    deadline_.clear();
    watch_for_hangup();
    net::co_spawn(stream_.get_executor(), write_stream(std::move(out)),
                  net::bind_cancellation_slot(hangup_.slot(),
                                              [self = shared_from_this()](std::exception_ptr) {
                                                if (self->watching_hangup_) {
                                                  self->watching_hangup_ = false;
                                                  beast::error_code ignored;
                                                  self->stream_.socket().cancel(ignored);
                                                }
                                                self->close();
                                              }));
  }

  net::awaitable<void> write_stream(http_reply out) {
    http::response<http::empty_body> res{static_cast<http::status>(out.status), request_.version()};
    res.set(http::field::server, "amfgate");
    res.set(http::field::content_type, out.content_type);
    for (auto& [k, v] : out.headers) res.set(k, v);
    res.chunked(true);
    res.keep_alive(false);
    // nginx (docker/nginx.conf) would otherwise hold the frames in its proxy buffers.
    res.set("X-Accel-Buffering", "no");
    std::size_t bytes_out = 0, pieces = 0;
    const auto log = [&] {
      const double seconds = std::chrono::duration<double>(clock::now() - started_).count();
      st_.stats.request(out.status, seconds, bytes_in_, bytes_out);
      if (st_.cfg.log.access) {
        st_.access->info("{} \"{} {}\" {} in={} out={} messages=0 faults=0 {:.3f}ms streamed={}",
                         client_, escaped_text{request_.method_string(), 32},
                         loggable_target{request_.target(), st_.cfg.sessions.cookie}, out.status,
                         bytes_in_, bytes_out, seconds * 1000, pieces);
      }
    };
    struct on_exit {
      decltype(log)& f;
      ~on_exit() { f(); }
    } logged{log};
    http::response_serializer<http::empty_body> sr{res};
    expire_in(st_.cfg.limits.read_timeout);
    co_await http::async_write_header(stream_, sr, net::use_awaitable);
    deadline_.clear();
    net::steady_timer later(stream_.get_executor());
    for (;;) {
      // While requests hold the whole memory budget, a stream reads nothing more: what waits
      // for it stays in the log (a slow stream costs no copies), and it reads on after.
      while (st_.budget.used() > st_.budget.max()) {
        later.expires_after(std::chrono::milliseconds(50));
        co_await later.async_wait(net::use_awaitable);
      }
      const std::string piece = co_await out.stream->next();
      if (piece.empty()) break;
      // Charged while it is written, as a reply is: other requests see what streams hold.
      st_.budget.take(piece.size());
      struct charged {
        memory_budget& budget;
        std::size_t bytes;
        ~charged() { budget.give(bytes); }
      } held{st_.budget, piece.size()};
      expire_in(st_.cfg.limits.read_timeout);
      beast::error_code ec;
      co_await net::async_write(stream_, http::make_chunk(net::buffer(piece)),
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        out.stream->unwritten();  // what it carried is read again by the client's next stream
        throw boost::system::system_error(ec);
      }
      deadline_.clear();
      bytes_out += piece.size();
      ++pieces;
    }
    co_await net::async_write(stream_, http::make_chunk_last(), net::use_awaitable);
  }

  // Answers an error that ends the connection.
  void fail(unsigned status, std::string body, std::chrono::seconds retry_after = {}) {
    http_reply r;
    r.status = status;
    r.body = std::move(body);
    if (retry_after.count() > 0) {
      r.headers.emplace_back("Retry-After", std::to_string(retry_after.count()));
    }
    respond(std::move(r), 11, false, false, "-", "-", 0);
  }

  void close() {
    release_memory();
    phase_ = phase::closed;
    deadline_.cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
    std::lock_guard lock(st_.mutex);
    if (registered_) {
      st_.connections.erase(self_);
      registered_ = false;
    }
  }

  beast::tcp_stream stream_;
  deadline deadline_;
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  // Before all that allocates from it. Fields past the buffer come from the heap, given back
  // as the next request begins.
  std::array<std::byte, 1024> fields_buffer_;
  std::pmr::monotonic_buffer_resource fields_memory_{fields_buffer_.data(), fields_buffer_.size()};
  std::optional<http::request_parser<pooled_body, field_allocator>> parser_;
  request request_{std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_)};
  std::optional<response> response_;  ///< being written
  http_request in_;                   // views into request_, and its body
  std::size_t bytes_in_ = 0;
  net::cancellation_signal hangup_;
  bool watching_hangup_ = false;
  bool hung_up_ = false;
  shared_state& st_;
  std::string address_, client_;  // "address", "address:port"
  admission admission_ = admission::refused;
  std::size_t charged_ = 0;          ///< held of the budget of requests in flight
  std::function<void()> unwritten_;  ///< the reply being written: see http_reply::unwritten
  bool first_ = true;
  phase phase_ = phase::reading;
  bool registered_ = true;
  clock::time_point started_ = clock::now();
  std::list<std::weak_ptr<connection>>::iterator self_;
};

// The CPUs the daemon may run on: its affinity mask (taskset, a container's cpuset), which
// hardware_concurrency() does not see.
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<unsigned>(CPU_COUNT(&set));
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned worker_threads(const config::worker_settings& w) {
  return w.threads ? w.threads : 4 * usable_cpus();
}

}  // namespace

// One io_context per I/O thread, each run by its thread alone: a connection lives on one
// context (chosen in turn as it is accepted), so its handlers need no strand and the threads
// share no scheduler queue. The first context also runs the acceptor, the shutdown timer,
// and what `executor()` is given to (the Redis store, messaging's timers). Signals are
// waited for on a thread of their own, so that a second one exits at once even while every
// I/O thread is busy.
std::vector<std::unique_ptr<net::io_context>> make_contexts(unsigned n) {
  std::vector<std::unique_ptr<net::io_context>> v;
  for (unsigned i = 0; i < n; ++i) v.push_back(std::make_unique<net::io_context>(1));
  return v;
}

struct http_server::impl {
  impl(const config::gateway_config& cfg, metrics& m, std::shared_ptr<spdlog::logger> log,
       std::shared_ptr<spdlog::logger> access)
      : st{cfg, m, std::move(log), std::move(access)},
        threads(cfg.threads ? cfg.threads : usable_cpus()),
        contexts(make_contexts(threads)),
        ioc(*contexts.front()),
        acceptor(ioc),
        signals(signal_context, SIGINT, SIGTERM),
        timer(ioc),
        workers(worker_threads(cfg.workers),
                cfg.workers.max_queue ? cfg.workers.max_queue : 64 * worker_threads(cfg.workers)) {}

  /// The I/O context of the next connection: each in turn.
  net::io_context& next_io() { return *contexts[next_context++ % contexts.size()]; }

  void accept() {
    acceptor.async_accept(next_io(), [this](beast::error_code ec, tcp::socket s) {
      if (ec) {
        if (ec != net::error::operation_aborted) {
          st.log->warn("accept failed: {}", ec.message());
          accept();
        }
        return;
      }
      std::make_shared<connection>(std::move(s), st)->start();
      accept();
    });
  }

  // Connections whose handshake the kernel completed but that were not accepted yet would be
  // reset by closing the acceptor, and a request a balancer sent on one is a 502 it may not
  // retry (a POST). So they are accepted before the close, and served like any other while
  // draining: answered with Connection: close.
  void accept_backlog() {
    beast::error_code ec;
    acceptor.non_blocking(true, ec);
    while (!ec) {
      tcp::socket s(next_io());
      acceptor.accept(s, ec);
      if (!ec) std::make_shared<connection>(std::move(s), st)->start();
    }
  }

  // On the signal thread: the second signal exits there and then; the first starts the
  // drain on the first I/O context.
  void wait_for_signal() {
    signals.async_wait([this](beast::error_code ec, int sig) {
      if (ec) return;
      if (st.draining.exchange(true)) {
        st.log->warn("second signal ({}): exiting now", sig);
        st.log->flush();
        std::_Exit(1);
      }
      st.log->info("signal {}: no longer accepting, draining requests in flight (grace {} ms)", sig,
                   st.cfg.shutdown_grace.count());
      net::post(ioc, [this] { drain(); });
      wait_for_signal();
    });
  }

  void drain() {
    st.routes->set_draining();
    {
      std::lock_guard lock(st.mutex);
      for (auto& w : st.connections) {
        if (auto c = w.lock()) c->close_if_idle();
      }
    }
    // After the idle ones are told to close: these have their first request on its way.
    accept_backlog();
    beast::error_code ignored;
    acceptor.close(ignored);
    deadline = clock::now() + st.cfg.shutdown_grace;
    poll_drained();
  }

  void poll_drained() {
    if (st.stats.open_connections() == 0 || clock::now() >= deadline) {
      if (st.stats.open_connections() > 0) {
        st.log->warn("grace period over with {} connections open", st.stats.open_connections());
      }
      exit_status = 0;
      for (auto& c : contexts) c->stop();
      return;
    }
    timer.expires_after(std::chrono::milliseconds(20));
    timer.async_wait([this](beast::error_code ec) {
      if (!ec) poll_drained();
    });
  }

  shared_state st;
  unsigned threads;
  std::vector<std::unique_ptr<net::io_context>> contexts;
  net::io_context& ioc;  ///< the first
  std::size_t next_context = 0;
  tcp::acceptor acceptor;
  net::io_context signal_context{1};
  net::signal_set signals;
  net::steady_timer timer;
  worker_pool workers;  // destroyed (joined) before the io_context its jobs post to
  clock::time_point deadline;
  std::atomic<std::uint16_t> bound_port{0};
  int exit_status = 0;
};

http_server::http_server(const config::gateway_config& cfg, metrics& m,
                         std::shared_ptr<spdlog::logger> log,
                         std::shared_ptr<spdlog::logger> access)
    : impl_(std::make_unique<impl>(cfg, m, std::move(log), std::move(access))) {}

http_server::~http_server() = default;

worker_pool& http_server::workers() {
  return impl_->workers;
}

net::any_io_executor http_server::executor() {
  return impl_->ioc.get_executor();
}

std::uint16_t http_server::port() const {
  return impl_->bound_port;
}

int http_server::run(router& routes) {
  auto& i = *impl_;
  i.st.routes = &routes;
  const tcp::endpoint ep(net::ip::make_address(i.st.cfg.listen.address), i.st.cfg.listen.port);
  i.acceptor.open(ep.protocol());
  i.acceptor.set_option(net::socket_base::reuse_address(true));
  i.acceptor.bind(ep);
  i.acceptor.listen(net::socket_base::max_listen_connections);
  i.bound_port = i.acceptor.local_endpoint().port();
  const auto pool = i.workers.snapshot();
  i.st.log->info("listening on {}:{} with {} threads and {} workers (queue {}), gateway paths:{}",
                 ep.address().to_string(), i.bound_port.load(), i.threads, pool.threads,
                 pool.max_queue, [&] {
                   std::string p;
                   for (const auto& g : i.st.cfg.gateway_paths) p += " " + g;
                   return p;
                 }());
  i.st.log->flush();  // the port, at once: scripts and tests read it (listen.port 0)
  i.accept();
  i.wait_for_signal();
  std::thread signal_thread([&i] { i.signal_context.run(); });
  struct stop_signals {
    net::io_context& context;
    std::thread& thread;
    ~stop_signals() {
      context.stop();
      thread.join();
    }
  } signals_stop{i.signal_context, signal_thread};
  // The other contexts may have nothing to do for a while: they run until stopped.
  std::vector<net::executor_work_guard<net::io_context::executor_type>> idle;
  std::vector<std::thread> io_threads;
  for (unsigned t = 1; t < i.threads; ++t) {
    idle.emplace_back(i.contexts[t]->get_executor());
    io_threads.emplace_back([&c = *i.contexts[t]] { c.run(); });
  }
  i.ioc.run();
  for (auto& t : io_threads) t.join();
  // No handler may run on past this: the services and the gateway go when this returns.
  if (const auto busy = i.workers.snapshot().busy) {
    i.st.log->info("waiting for {} handlers still running on the worker pool", busy);
  }
  i.workers.join();
  i.st.log->info("stopped");
  return i.exit_status;
}

}  // namespace amfgate::server
