#include "connection.hpp"

#include <sys/socket.h>

#include <array>
#include <cstdio>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <tuple>

#include "amfgate/services/quote.hpp"
#include "body_pool.hpp"
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

namespace {

// Beast's operations allocate their state (and Asio its socket operations) with the
// handler's allocator, std::allocator unless it names one: the thread's recycled blocks
// instead, so that a request's reads and write reuse the last one's memory. An operation's
// error comes back as a value: a closed connection is not exceptional.
auto recycled() {
  return net::bind_allocator(net::recycling_allocator<void>(), net::as_tuple(net::use_awaitable));
}

// A request whose framing two parsers could read differently (RFC 9112 6.1 and 6.3) is
// refused and its connection closed, so that no bytes behind it are read as a request of
// their own: a Transfer-Encoding other than exactly `chunked` (Beast would read no body), or
// one beside a Content-Length. HTTP/1.1 requires Host.
template <class Request>
std::optional<std::pair<unsigned, std::string>> refuse_framing(const Request& h) {
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

}  // namespace

void pooled_body::reader::init(const boost::optional<std::uint64_t>& length,
                               boost::system::error_code& ec) {
  if (body_.capacity() <= std::string().capacity()) body_ = body_pool::take();
  http::string_body::reader::init(length, ec);
}

connection::connection(tcp::socket&& socket, shared_state& st, unsigned listener)
    : stream_(std::move(socket)), deadline_(stream_.get_executor()), st_(st), listener_(listener) {
  beast::error_code ec;
  const auto ep = stream_.socket().remote_endpoint(ec);
  address_ = ec ? "unknown" : ep.address().to_string();
  client_ = ec ? "unknown" : address_ + ":" + std::to_string(ep.port());
  std::tie(admission_, load_) = st_.admit(address_, !ec && ep.address().is_loopback());
  st_.stats.connection_opened();
}

connection::~connection() {
  release_memory();
  st_.leave(address_, admission_, *load_);
  st_.stats.connection_closed();
}

void connection::start() {
  {
    std::lock_guard lock(st_.mutex);
    st_.connections.push_back(weak_from_this());
    self_ = std::prev(st_.connections.end());
  }
  // The hang-up watch cancels what the coroutine awaits: the handler of a request, or a
  // stream's wait for its next frames.
  // However it ends (a socket error or a cancelled wait throws), the connection closes: a
  // request's own errors are answered within it (route).
  net::co_spawn(
      stream_.get_executor(), serve(),
      net::bind_cancellation_slot(
          hangup_.slot(), [self = shared_from_this()](std::exception_ptr) { self->close(); }));
}

void connection::close_if_idle() {
  net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == phase::idle) self->drain_idle();
  });
}

// A connection's life, a request at a time: read its header, admit it, read its body, route
// it, write the answer; then the next on a kept-alive connection. A stream takes the socket
// over once its headers are written, until it ends.
net::awaitable<void> connection::serve() {
  // (Answers are named before they are awaited: GCC 12 may copy a temporary made within a
  // co_await expression byte for byte, and its short strings then point into the wrong object.)
  if (admission_ == admission::refused) {
    st_.log->warn(
        "{}: connection refused: too many connections (limits.max_connections {}, per "
        "client {})",
        client_, st_.cfg.limits.max_connections, st_.cfg.limits.max_connections_per_client);
    http_reply refused =
        error_reply(503, "too many connections; retry later\n", std::chrono::seconds(1));
    co_await respond(std::move(refused), false);
    co_return;
  }
  for (bool first = true;; first = false) {
    const bool header = co_await read_header(first);
    if (!header) co_return;
    if (auto refused = refusal()) {
      co_await respond(std::move(*refused), false);
      co_return;
    }
    const bool body = co_await read_body();
    if (!body) co_return;
    if (!st_.begin_request(*load_)) {
      st_.stats.busy_refused();
      request_ = parser_->release();
      bytes_in_ = request_.body().size();
      http_reply busy =
          error_reply(503, "too many requests in flight from your address; retry later\n",
                      std::chrono::seconds(1));
      const bool again = co_await respond(std::move(busy), keep_alive());
      if (!again) co_return;
      continue;
    }
    prepare_request();
    http_reply out = co_await route();
    if (out.stream) {
      co_await write_stream(std::move(out));
      co_return;
    }
    const bool again = co_await respond(std::move(out), keep_alive());
    if (!again) co_return;
  }
}

net::awaitable<bool> connection::read_header(bool first) {
  if (st_.draining && st_.cfg.shutdown_idle_wait <= clock::duration::zero()) co_return false;
  // The last exchange is over: nothing uses its fields now.
  parser_.reset();
  request_ = request(std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_));
  fields_memory_.release();
  parser_.emplace(std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_));
  parser_->body_limit(st_.cfg.limits.max_body_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(st_.cfg.limits.max_header_bytes));
  expire_in(first ? st_.cfg.limits.header_timeout : st_.cfg.limits.idle_timeout);
  phase_ = phase::idle;
  // Answered with keep-alive just before the drain began: the client may send again.
  if (st_.draining) drain_idle();
  const auto [ec, n] = co_await http::async_read_header(stream_, buffer_, *parser_, recycled());
  const bool nothing_came = buffer_.size() == 0;
  phase_ = phase::reading;
  if (!ec) {
    started_ = clock::now();
    co_return true;
  }
  if (auto answer = read_failed(ec, nothing_came)) co_await respond(std::move(*answer), false);
  co_return false;
}

std::optional<http_reply> connection::refusal() {
  if (auto framing = refuse_framing(parser_->get())) {
    st_.log->info("{}: {}", client_, framing->second);
    return error_reply(framing->first, framing->second + "\n");
  }
  if (admission_ == admission::health_only &&
      path_of(parser_->get().target()) != std::string_view("/healthz")) {
    return error_reply(503, "too many connections: this one is kept for /healthz\n",
                       std::chrono::seconds(1));
  }
  // Bodies are held in memory: they count against the budget of requests in flight.
  if (const auto length = parser_->content_length()) return charge(*length);
  return std::nullopt;
}

net::awaitable<bool> connection::read_body() {
  beast::error_code ec;
  const auto length = parser_->content_length();
  const bool in_buffer = length && buffer_.size() >= *length;
  // Most AMF bodies arrive with their headers: parse them from the buffer, with no second
  // read (and no timer) on the way. A request without a body (GET, or Content-Length: 0) is
  // complete already: the parser takes no more bytes ("stale parser").
  if (!parser_->is_done() && in_buffer) buffer_.consume(parser_->put(buffer_.data(), ec));
  if (!ec && !parser_->is_done()) {
    // `Expect: 100-continue` (curl sends it for bodies over 1 MiB, then waits a second for it).
    if (!in_buffer && beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
      expire_in(st_.cfg.limits.read_timeout);
      const auto [failed, n] =
          co_await net::async_write(stream_, net::buffer(go_on.data(), go_on.size()), recycled());
      if (failed) co_return false;
    }
    // A slow body is bounded by the read timeout from here.
    expire_in(st_.cfg.limits.read_timeout);
    std::tie(ec, std::ignore) = co_await http::async_read(stream_, buffer_, *parser_, recycled());
  }
  std::optional<http_reply> answer;
  if (ec) {
    answer = read_failed(ec, false);
  } else if (!length) {  // chunked: its size now
    answer = charge(parser_->get().body().size());
  }
  if (!ec && !answer) co_return true;
  if (answer) co_await respond(std::move(*answer), false);
  co_return false;
}

std::optional<http_reply> connection::read_failed(beast::error_code ec, bool nothing_came) {
  if (closing_ == closing::timed_out) {
    // A keep-alive connection that sent nothing more is normal.
    if (!nothing_came) st_.log->info("{}: request not received in time, closing", client_);
    return std::nullopt;
  }
  if (ec == http::error::end_of_stream || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted ||
      ec == net::error::bad_descriptor) {
    return std::nullopt;
  }
  if (ec == http::error::body_limit) {
    return error_reply(413, "request body larger than " +
                                std::to_string(st_.cfg.limits.max_body_bytes) + " bytes\n");
  }
  if (ec == http::error::header_limit) return error_reply(431, "request headers too large\n");
  st_.log->info("{}: bad HTTP request: {}", client_, ec.message());
  return error_reply(400, "bad HTTP request: " + ec.message() + "\n");
}

void connection::prepare_request() {
  request_ = parser_->release();
  in_.method = request_.method_string();
  in_.target = request_.target();
  in_.content_type = request_[http::field::content_type];
  in_.cookie = request_[http::field::cookie];
  in_.origin = request_[http::field::origin];
  in_.user_agent = request_[http::field::user_agent];
  in_.authorization = request_[http::field::authorization];
  in_.version = request_.version();
  bytes_in_ = request_.body().size();
  in_.body = std::move(request_.body());
  in_.client = client_;
  in_.listener = listener_;
  in_.memory = &st_.arenas;
  in_.on_wait = [this] { watch_for_hangup(); };  // runs within route(): `this` lives
  in_.on_park = [this](bool parked) {
    parked ? st_.end_request(*load_) : st_.resume_request(*load_);
  };
}

net::awaitable<http_reply> connection::route() {
  phase_ = phase::handling;
  // Handlers have deadlines of their own (limits.call_timeout_ms): the connection waits.
  deadline_.clear();
  struct ended {
    connection& c;
    ~ended() {
      c.st_.end_request(*c.load_);
      c.stop_watching();
    }
  } request_ends{*this};
  try {
    co_return co_await st_.routes.route(in_);
  } catch (const boost::system::system_error& e) {
    if (e.code() == net::error::operation_aborted && closing_ == closing::hung_up) throw;
    st_.log->error("{}: {} {}: {}", client_, in_.method, in_.target, e.what());
  } catch (const std::exception& e) {
    st_.log->error("{}: {} {}: {}", client_, in_.method, in_.target, e.what());
  }
  co_return error_reply(500, "internal error\n");
}

void connection::watch_for_hangup() {
  watching_hangup_ = true;
  stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) {
        if (ec || (self->phase_ != phase::handling && self->phase_ != phase::streaming)) return;
        char c;
        const auto n =
            ::recv(self->stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          self->closing_ = closing::hung_up;
          self->hangup_.emit(net::cancellation_type::terminal);
        }
      });
}

void connection::stop_watching() {
  if (!std::exchange(watching_hangup_, false)) return;
  beast::error_code ignored;
  stream_.socket().cancel(ignored);  // ends the hang-up watch
}

net::awaitable<bool> connection::respond(http_reply out, bool keep_alive) {
  phase_ = phase::writing;
  const bool head = request_.method() == http::verb::head;
  response_.emplace(std::piecewise_construct, std::make_tuple(), std::make_tuple(&fields_memory_));
  response& res = *response_;
  res.result(static_cast<http::status>(out.status));
  res.version(request_.version());
  res.set(http::field::server, "amfgate");
  if (!out.content_type.empty()) res.set(http::field::content_type, out.content_type);
  for (auto& [k, v] : out.headers) res.set(k, v);
  res.keep_alive(keep_alive);
  const std::size_t bytes_out = out.body.size();
  st_.budget.take(bytes_out);  // it exists already; held until written
  charged_ += bytes_out;
  res.body() = head ? std::string() : std::move(out.body);
  res.prepare_payload();
  if (head) res.content_length(bytes_out);
  log_request(out, bytes_out, 0);
  expire_in(st_.cfg.limits.read_timeout);
  const auto [ec, n] = co_await http::async_write(stream_, res, recycled());
  body_pool::give(std::move(res.body()));
  response_.reset();
  release_memory();
  if (ec && out.unwritten) out.unwritten();  // what it carried is read again
  co_return !ec && keep_alive;
}

// A write that cannot finish within limits.read_timeout ends the stream too.
net::awaitable<void> connection::write_stream(http_reply out) {
  phase_ = phase::streaming;
  deadline_.clear();
  watch_for_hangup();
  http::response<http::empty_body> res{static_cast<http::status>(out.status), request_.version()};
  res.set(http::field::server, "amfgate");
  res.set(http::field::content_type, out.content_type);
  for (auto& [k, v] : out.headers) res.set(k, v);
  res.chunked(true);
  res.keep_alive(false);
  // nginx (docker/nginx.conf) would otherwise hold the frames in its proxy buffers.
  res.set("X-Accel-Buffering", "no");
  std::size_t bytes_out = 0, pieces = 0;
  struct logged {
    connection& c;
    const http_reply& out;
    const std::size_t &bytes, &pieces;
    ~logged() {
      c.log_request(out, bytes, pieces);
      c.stop_watching();
    }
  } at_end{*this, out, bytes_out, pieces};
  http::response_serializer<http::empty_body> sr{res};
  expire_in(st_.cfg.limits.read_timeout);
  co_await http::async_write_header(stream_, sr, net::use_awaitable);
  deadline_.clear();
  beast::error_code unused;
  stream_.socket().non_blocking(true, unused);  // (for the writes at once below)
  net::steady_timer later(stream_.get_executor());
  for (;;) {
    // While requests hold the whole memory budget, a stream reads nothing more: what waits
    // for it stays in the log (a slow stream costs no copies), and it reads on after.
    while (st_.budget.used() > st_.budget.max()) {
      later.expires_after(std::chrono::milliseconds(50));
      co_await later.async_wait(net::use_awaitable);
    }
    const std::string_view piece = co_await out.stream->next();
    if (piece.empty()) break;
    // Charged while it is written, as a reply is: other requests see what streams hold.
    st_.budget.take(piece.size());
    struct charged {
      memory_budget& budget;
      std::size_t bytes;
      ~charged() { budget.give(bytes); }
    } held{st_.budget, piece.size()};
    // One HTTP chunk, framed here: Beast's chunk_body allocates its size line.
    char size[24];
    const auto digits =
        static_cast<std::size_t>(std::snprintf(size, sizeof size, "%zx\r\n", piece.size()));
    const std::array<net::const_buffer, 3> chunk{net::buffer(size, digits), net::buffer(piece),
                                                 net::buffer("\r\n", 2)};
    // Most pieces fit in the socket's send buffer: written at once, in one system call, with
    // no asynchronous operation and its completion. Only what does not fit waits.
    beast::error_code ec;
    const std::size_t sent = stream_.socket().write_some(chunk, ec);
    if (ec == net::error::would_block) ec = {};
    if (!ec && sent < digits + piece.size() + 2) {
      beast::buffers_suffix<std::array<net::const_buffer, 3>> rest(chunk);
      rest.consume(sent);
      expire_in(st_.cfg.limits.read_timeout);
      const auto [failed, n] = co_await net::async_write(stream_, rest, recycled());
      ec = failed;
      deadline_.clear();
    }
    if (ec) {
      out.stream->unwritten();  // what it carried is read again by the client's next stream
      co_return;
    }
    bytes_out += piece.size();
    ++pieces;
  }
  co_await net::async_write(stream_, http::make_chunk_last(), recycled());
}

http_reply connection::error_reply(unsigned status, std::string body,
                                   std::chrono::seconds retry_after) {
  http_reply r;
  r.status = status;
  r.body = std::move(body);
  if (retry_after.count() > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(retry_after.count()));
  }
  return r;
}

void connection::log_request(const http_reply& out, std::size_t bytes_out, std::size_t pieces) {
  const double seconds = std::chrono::duration<double>(clock::now() - started_).count();
  st_.stats.request(out.status, seconds, bytes_in_, bytes_out);
  st_.stats.messages(out.messages, out.faults);
  if (!st_.cfg.log.access) return;
  // A refusal before a request was read has no method or target.
  std::string_view method = request_.method_string(), target = request_.target();
  if (method.empty()) method = target = "-";
  // A poll that parked says how long: its time is mostly that wait; a stream, its pieces.
  std::string extra;
  if (out.parked_ms >= 0) extra = fmt::format(" parked={:.0f}ms", out.parked_ms);
  if (out.stream) extra = fmt::format(" streamed={}", pieces);
  st_.access->info("{} \"{} {}\" {} in={} out={} messages={} faults={} {:.3f}ms{}", client_,
                   escaped_text{method, 32}, loggable_target{target, st_.cfg.sessions.cookie},
                   out.status, bytes_in_, bytes_out, out.messages, out.faults, seconds * 1000,
                   extra);
}

// Takes `bytes` from the budget of requests in flight; when it has not that much left, the
// 503 that says so (logged).
std::optional<http_reply> connection::charge(std::size_t bytes) {
  if (st_.budget.try_take(bytes)) {
    charged_ += bytes;
    return std::nullopt;
  }
  st_.stats.busy_refused();
  st_.log->warn("{}: 503: requests in flight hold {} of {} bytes (limits.max_inflight_bytes)",
                client_, st_.budget.used(), st_.budget.max());
  return error_reply(503, "server busy: requests in flight hold the memory they may; retry later\n",
                     std::chrono::seconds(1));
}

void connection::release_memory() {
  st_.budget.give(std::exchange(charged_, 0));
}

void connection::expire_in(clock::duration d) {
  deadline_.set(clock::now() + d, [self = shared_from_this()] {
    self->closing_ = closing::timed_out;
    beast::error_code ignored;
    self->stream_.socket().cancel(ignored);
    self->stream_.socket().close(ignored);
  });
}

// Draining and idle: close now, or give the client `shutdown_idle_wait` to close first (a
// balancer may be sending on this connection right now; closing under it loses that call).
void connection::drain_idle() {
  const auto wait = st_.cfg.shutdown_idle_wait;
  if (wait <= clock::duration::zero()) {
    beast::error_code ignored;
    stream_.socket().close(ignored);
  } else if (clock::now() + wait < deadline_.at()) {
    expire_in(wait);
  }
}

void connection::close() {
  if (phase_ == phase::closed) return;
  release_memory();
  phase_ = phase::closed;
  deadline_.cancel();
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.socket().close(ec);
  std::lock_guard lock(st_.mutex);
  st_.connections.erase(self_);
}

}  // namespace amfgate::server
