#include "amfgate/bridge/upstream.hpp"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <variant>

#include "amfgate/services/fault.hpp"
#include "amfgate/services/quote.hpp"

namespace amfgate::bridge {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using clock = std::chrono::steady_clock;
using services::fault;

namespace {

constexpr std::array<double, 12> buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
constexpr const char* outcome_names[] = {"ok",   "fault",       "failed",   "timeout",
                                         "busy", "unavailable", "cancelled"};

auto awaitable_tuple() {
  return net::as_tuple(net::use_awaitable);
}

// Runs what it watches for (closing a socket) if its time comes first. The timer's handler
// holds only the shared state: it may run after the coroutine that made it has gone.
class watchdog {
 public:
  watchdog(const net::any_io_executor& ex, clock::time_point at) : timer_(ex, at) {
    timer_.async_wait([s = state_](boost::system::error_code ec) {
      if (ec || !s->on_time) return;
      s->fired = true;
      std::exchange(s->on_time, nullptr)();
    });
  }
  ~watchdog() {
    state_->on_time = nullptr;
    timer_.cancel();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  void watch(std::function<void()> f) { state_->on_time = std::move(f); }
  void disarm() { state_->on_time = nullptr; }
  bool fired() const { return state_->fired; }

 private:
  struct state {
    std::function<void()> on_time;
    bool fired = false;
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
  net::steady_timer timer_;
};

// The earlier of a call's deadline and `timeout` from now.
clock::time_point until(clock::time_point deadline, std::chrono::milliseconds timeout) {
  if (timeout.count() == 0) return deadline;
  return std::min(deadline, clock::now() + timeout);
}

// Why the calling coroutine was cancelled, if it was: before the call's deadline its caller
// went away (the client hung up); at or past it, the gateway ended a call out of time.
enum class cut { no, caller_gone, deadline };
cut cut_by(const net::cancellation_state& c, clock::time_point deadline) {
  if (c.cancelled() == net::cancellation_type::none) return cut::no;
  return clock::now() < deadline ? cut::caller_gone : cut::deadline;
}

}  // namespace

endpoint endpoint::parse(std::string_view url) {
  endpoint e;
  auto path_of = [](std::string_view p) {
    std::string s(p.empty() ? "/" : p);
    if (!s.starts_with('/')) s.insert(0, "/");
    if (!s.ends_with('/')) s += '/';
    return s;
  };
  if (url.starts_with("unix:") || url.starts_with("http://unix:")) {
    // unix:/run/app.sock, or nginx's http://unix:/run/app.sock:/path/
    url.remove_prefix(url.starts_with("unix:") ? 5 : 12);
    const auto colon = url.find(':');
    e.how = kind::unix_socket;
    e.socket = std::string(url.substr(0, colon));
    e.base_path = path_of(colon == std::string_view::npos ? "" : url.substr(colon + 1));
    e.host = "localhost";
    if (!e.socket.starts_with('/')) throw std::invalid_argument("a Unix socket needs a path");
    return e;
  }
  if (url.starts_with("https://")) {
    e.how = kind::tls;
    url.remove_prefix(8);
    e.port = "443";
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
    e.port = "80";
  } else {
    throw std::invalid_argument("expected http://, https:// or unix:");
  }
  const auto slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  e.base_path = path_of(slash == std::string_view::npos ? "" : url.substr(slash));
  std::string_view host = authority;
  if (authority.starts_with('[')) {  // [::1]:8443
    const auto close = authority.find(']');
    if (close == std::string_view::npos) throw std::invalid_argument("unclosed [ in the host");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') {
      e.port = std::string(authority.substr(close + 2));
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    e.port = std::string(authority.substr(colon + 1));
  }
  e.host = std::string(host);
  if (e.host.empty()) throw std::invalid_argument("no host");
  if (e.port.empty() || e.port.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("the port is not a number");
  }
  return e;
}

struct upstream::tls {
  net::ssl::context context{net::ssl::context::tls_client};
};

struct upstream::connection {
  using tls_stream = net::ssl::stream<tcp::socket>;
  std::variant<tcp::socket, tls_stream, net::local::stream_protocol::socket> stream;
  boost::beast::flat_buffer buffer;
  clock::time_point idle_since;
  bool reused = false;
  const net::execution_context* home;  ///< the I/O thread's context whose reactor has it

  template <class S>
  explicit connection(S s)
      : stream(std::move(s)),
        home(&std::visit(
            [](auto& x) -> net::execution_context& {
              return net::query(x.get_executor(), net::execution::context);
            },
            stream)) {}
  void close() {
    boost::system::error_code ignored;
    std::visit(
        [&](auto& s) {
          if constexpr (std::is_same_v<std::decay_t<decltype(s)>, tls_stream>) {
            s.lowest_layer().close(ignored);
          } else {
            s.close(ignored);
          }
        },
        stream);
  }
};

struct upstream::waiter {
  explicit waiter(net::any_io_executor ex) : executor(ex), timer(ex) {}
  net::any_io_executor executor;
  net::steady_timer timer;
  std::unique_ptr<connection> handed;  ///< a connection given back by another call
  bool may_open = false;               ///< or the right to open one
};

upstream::upstream(std::string name, const config::upstream_settings& s,
                   std::size_t max_answer_bytes, std::shared_ptr<spdlog::logger> log)
    : name_(std::move(name)),
      settings_(s),
      where_(endpoint::parse(s.url)),
      max_answer_bytes_(max_answer_bytes),
      log_(std::move(log)) {
  if (where_.how == endpoint::kind::tls) {
    tls_ = std::make_unique<tls>();
    auto& c = tls_->context;
    c.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                  net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                  net::ssl::context::no_tlsv1_1);
    if (s.ca_file.empty()) {
      c.set_default_verify_paths();
    } else {
      c.load_verify_file(s.ca_file);
    }
    c.set_verify_mode(net::ssl::verify_peer);
  }
}

upstream::~upstream() = default;

upstream::admission upstream::admit() {
  // Under mutex_.
  if (failures_ < settings_.failure_threshold) return admission::admitted;
  if (clock::now() < down_until_ || probing_) return admission::refused;
  probing_ = true;  // down_ms passed: this call tries
  return admission::probe;
}

void upstream::failed() {
  std::lock_guard lock(mutex_);
  probing_ = false;
  if (++failures_ == settings_.failure_threshold || failures_ > settings_.failure_threshold) {
    if (failures_ == settings_.failure_threshold) {
      log_->warn("upstream {} is down after {} failures in a row: calls fail fast for {} ms", name_,
                 failures_, settings_.down.count());
    }
    down_until_ = clock::now() + settings_.down;
  }
}

void upstream::succeeded() {
  std::lock_guard lock(mutex_);
  if (failures_ >= settings_.failure_threshold) log_->info("upstream {} is up again", name_);
  failures_ = 0;
  probing_ = false;
}

void upstream::count(outcome o) {
  calls_[static_cast<std::size_t>(o)].fetch_add(1, std::memory_order_relaxed);
}

void upstream::judged(outcome o, bool upstream_failed) {
  count(o);
  if (upstream_failed) {
    failed();
  } else {
    succeeded();
  }
}

// A call's hold on the pool: its place in flight, then a place among max_connections (a
// connection, or the right to open one). However the call ends (an answer, a failure, or an
// exception at any co_await once its caller has gone), the destructor gives back what it holds.
struct upstream::lease {
  explicit lease(upstream& u) : up(u) {}
  ~lease() { up.release(*this); }
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;

  upstream& up;
  bool in_flight = false;  ///< counted in inflight_
  bool placed = false;     ///< counted in open_
  bool probe = false;      ///< the one call let in to try a down upstream
  std::unique_ptr<connection> c;
  bool keep = false;  ///< c goes back to the pool
};

net::awaitable<void> upstream::acquire(lease& l, clock::time_point deadline) {
  std::vector<std::unique_ptr<connection>> stale;  // closed outside the lock
  std::shared_ptr<waiter> w;
  const auto ex = co_await net::this_coro::executor;
  const auto cancellation = co_await net::this_coro::cancellation_state;
  const net::execution_context& here = net::query(ex, net::execution::context);
  {
    std::lock_guard lock(mutex_);
    if (inflight_ >= settings_.max_inflight) {
      count(outcome::busy);
      throw fault("Server.Busy", "upstream " + name_ + " has " +
                                     std::to_string(settings_.max_inflight) +
                                     " calls in flight (max_inflight); retry later");
    }
    const admission admitted = admit();
    if (admitted == admission::refused) {
      count(outcome::unavailable);
      throw fault("Server.Upstream.Unavailable", "upstream " + name_ + " is down after " +
                                                     std::to_string(failures_) +
                                                     " failures in a row; retry later");
    }
    l.probe = admitted == admission::probe;
    ++inflight_;
    l.in_flight = true;
    // Idle too long: the backend may have closed it.
    const auto oldest = clock::now() - settings_.idle_timeout;
    for (auto it = idle_.begin(); it != idle_.end();) {
      if ((*it)->idle_since < oldest) {
        stale.push_back(std::move(*it));
        it = idle_.erase(it);
      } else {
        ++it;
      }
    }
    open_ -= stale.size();
    // The newest of this I/O thread's own, whose socket its reactor watches. Another thread's
    // only when the pool is full: each of its operations would wake that thread.
    auto pick = idle_.end();
    for (auto it = idle_.rbegin(); it != idle_.rend(); ++it) {
      if ((*it)->home == &here) {
        pick = std::prev(it.base());
        break;
      }
    }
    if (pick == idle_.end() && !idle_.empty() && open_ >= settings_.max_connections) {
      pick = std::prev(idle_.end());
    }
    if (pick != idle_.end()) {
      l.c = std::move(*pick);
      idle_.erase(pick);
      l.placed = true;
    } else if (open_ < settings_.max_connections) {
      ++open_;
      l.placed = true;
    } else {
      w = std::make_shared<waiter>(ex);
      waiters_.push_back(w);
    }
  }
  for (auto& s : stale) s->close();
  if (w) {
    w->timer.expires_at(deadline);
    co_await w->timer.async_wait(awaitable_tuple());
    std::lock_guard lock(mutex_);
    if (w->handed) {
      l.c = std::move(w->handed);
      l.placed = true;
    } else if (w->may_open) {
      l.placed = true;
    } else {
      std::erase(waiters_, w);
      if (cut_by(cancellation, deadline) == cut::caller_gone) {
        throw boost::system::system_error(net::error::operation_aborted);
      }
      count(outcome::timeout);
      if (l.probe) probing_ = false;  // another call may try the down upstream
      throw fault("Server.Timeout",
                  "no connection to upstream " + name_ + " came free before the call's deadline");
    }
  }
  if (!l.c) co_await connect(l, deadline);
}

net::awaitable<void> upstream::connect(lease& l, clock::time_point deadline) {
  const auto ex = co_await net::this_coro::executor;
  const auto cancellation = co_await net::this_coro::cancellation_state;
  watchdog time(ex, until(deadline, settings_.connect_timeout));
  std::unique_ptr<connection> c;
  boost::system::error_code ec;
  const char* step = "connect";
  if (where_.how == endpoint::kind::unix_socket) {
    net::local::stream_protocol::socket s(ex);
    time.watch([&] { s.close(); });
    std::tie(ec) = co_await s.async_connect(where_.socket, awaitable_tuple());
    if (!ec) c = std::make_unique<connection>(std::move(s));
  } else {
    tcp::resolver resolver(ex);
    time.watch([&] { resolver.cancel(); });
    step = "resolve";
    auto [rec, results] =
        co_await resolver.async_resolve(where_.host, where_.port, awaitable_tuple());
    ec = rec;
    tcp::socket s(ex);
    if (!ec && !time.fired()) {
      step = "connect";
      time.watch([&] { s.close(); });
      std::tie(ec, std::ignore) = co_await net::async_connect(s, results, awaitable_tuple());
      if (!ec) s.set_option(tcp::no_delay(true), ec);
    }
    if (!ec && !time.fired() && tls_) {
      step = "TLS handshake";
      connection::tls_stream t(std::move(s), tls_->context);
      time.watch([&] { t.lowest_layer().close(); });
      SSL_set_tlsext_host_name(t.native_handle(), where_.host.c_str());
      t.set_verify_callback(net::ssl::host_name_verification(where_.host));
      std::tie(ec) = co_await t.async_handshake(net::ssl::stream_base::client, awaitable_tuple());
      if (!ec) c = std::make_unique<connection>(std::move(t));
    } else if (!ec && !time.fired()) {
      c = std::make_unique<connection>(std::move(s));
    }
  }
  time.disarm();
  const cut cancelled = cut_by(cancellation, deadline);
  const bool timed_out = time.fired() || cancelled == cut::deadline;
  if (c && !timed_out) {
    connects_.fetch_add(1, std::memory_order_relaxed);
    l.c = std::move(c);
    co_return;
  }
  if (c) c->close();
  if (cancelled == cut::caller_gone) {
    throw boost::system::system_error(net::error::operation_aborted);
  }
  failed();
  const std::string where =
      where_.how == endpoint::kind::unix_socket ? where_.socket : where_.host + ":" + where_.port;
  if (timed_out) {
    count(outcome::timeout);
    throw fault("Server.Timeout", "upstream " + name_ + ": no connection to " + where + " within " +
                                      std::to_string(settings_.connect_timeout.count()) + " ms");
  }
  count(outcome::unavailable);
  throw fault("Server.Upstream.Unavailable",
              "upstream " + name_ + ": " + step + " to " + where + " failed: " + ec.message());
}

void upstream::release(lease& l) {
  std::shared_ptr<waiter> w;
  {
    std::lock_guard lock(mutex_);
    if (l.in_flight) --inflight_;
    if (l.placed) {
      if (!waiters_.empty()) {
        w = waiters_.front();
        waiters_.erase(waiters_.begin());
      }
      const bool keep = l.c && l.keep && !closed_;
      if (keep && w) {
        w->handed = std::move(l.c);
      } else if (keep) {
        l.c->idle_since = clock::now();
        l.c->reused = true;
        idle_.push_back(std::move(l.c));
      } else if (w) {
        w->may_open = true;  // its place passes to the waiter
      } else {
        --open_;
      }
    }
  }
  if (l.c) l.c->close();
  if (w) net::post(w->executor, [w] { w->timer.cancel(); });
}

void upstream::close() {
  std::vector<std::unique_ptr<connection>> idle;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    idle.swap(idle_);
    open_ -= idle.size();
  }
  for (auto& c : idle) c->close();
}

void upstream::abandoned(const lease& l) {
  count(outcome::cancelled);
  if (l.probe) {
    std::lock_guard lock(mutex_);
    probing_ = false;  // another call may try the down upstream
  }
}

namespace {

template <class Stream>
net::awaitable<boost::system::error_code> exchange(Stream& s, boost::beast::flat_buffer& buffer,
                                                   http::request<http::string_body>& req,
                                                   http::response_parser<http::string_body>& res) {
  auto [wec, written] = co_await http::async_write(s, req, awaitable_tuple());
  if (wec) co_return wec;
  auto [rec, read] = co_await http::async_read(s, buffer, res, awaitable_tuple());
  co_return rec;
}

}  // namespace

net::awaitable<answer> upstream::post(std::string path, std::string body,
                                      clock::time_point deadline) {
  const auto start = clock::now();
  http::request<http::string_body> req{http::verb::post, where_.base_path + path, 11};
  req.set(http::field::host, where_.host);
  req.set(http::field::content_type, "application/json");
  req.set(http::field::accept, "application/json");
  req.set(http::field::user_agent, "amfgate");
  req.body() = std::move(body);
  req.prepare_payload();

  const auto ex = co_await net::this_coro::executor;
  const auto cancellation = co_await net::this_coro::cancellation_state;
  for (int attempt = 0;; ++attempt) {
    lease l(*this);
    try {
      co_await acquire(l, deadline);
      if (cut_by(cancellation, deadline) != cut::no) {
        l.keep = true;  // unused: back to the pool
        throw boost::system::system_error(net::error::operation_aborted);
      }
      http::response_parser<http::string_body> res;
      res.body_limit(max_answer_bytes_);
      res.header_limit(64 * 1024);
      // Whatever is under way is closed when the time is up.
      watchdog time(ex, until(deadline, settings_.read_timeout));
      time.watch([&l] { l.c->close(); });
      const auto ec = co_await std::visit(
          [&](auto& s) { return exchange(s, l.c->buffer, req, res); }, l.c->stream);
      time.disarm();
      if (!ec) {
        l.keep = res.get().keep_alive() && !time.fired();
        answer a{res.get().result_int(), std::move(res.get().body()),
                 std::string(res.get()[http::field::content_type])};
        const double seconds = std::chrono::duration<double>(clock::now() - start).count();
        latency_count_.fetch_add(1, std::memory_order_relaxed);
        latency_micros_.fetch_add(static_cast<std::uint64_t>(seconds * 1e6),
                                  std::memory_order_relaxed);
        for (std::size_t i = 0; i < buckets.size(); ++i) {
          if (seconds <= buckets[i]) latency_[i].fetch_add(1, std::memory_order_relaxed);
        }
        co_return a;
      }
      const cut cancelled = cut_by(cancellation, deadline);
      const bool timed_out = time.fired() || cancelled == cut::deadline;
      // Mid-answer when the caller went away: the connection is closed (l.keep is false).
      if (cancelled == cut::caller_gone) {
        throw boost::system::system_error(net::error::operation_aborted);
      }
      // A pooled connection the backend closed while it was idle breaks before any byte of an
      // answer: the request goes once more, on a new connection.
      const bool stale = l.c->reused && !timed_out && !res.got_some() && attempt == 0 &&
                         (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                          ec == net::error::broken_pipe || ec == net::error::eof);
      if (stale) continue;
      if (timed_out) {
        count(outcome::timeout);
        failed();
        throw fault("Server.Timeout", "upstream " + name_ + " did not answer in time");
      }
      count(outcome::failed);
      failed();
      if (ec == http::error::body_limit) {
        throw fault("Server.Upstream.Failed", "upstream " + name_ + " answered more than " +
                                                  std::to_string(max_answer_bytes_) +
                                                  " bytes (limits.max_response_bytes)");
      }
      throw fault("Server.Upstream.Failed",
                  "upstream " + name_ + ": the answer broke off: " + ec.message());
    } catch (const boost::system::system_error& e) {
      // The caller went away (its client hung up), here or at any co_await below: no failure
      // of the upstream.
      if (e.code() == net::error::operation_aborted) abandoned(l);
      throw;
    }
  }
}

void upstream::render(std::string& out) const {
  const std::string label = "upstream=\"" + name_ + "\"";
  auto line = [&](const char* metric, const std::string& labels, auto v) {
    out += metric;
    out += '{';
    out += labels;
    out += "} ";
    out += std::to_string(v);
    out += '\n';
  };
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    line("amfgate_upstream_calls_total",
         label + ",outcome=\"" + std::string(outcome_names[i]) + "\"", calls_[i].load());
  }
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    char le[32];
    std::snprintf(le, sizeof le, "%g", buckets[i]);
    line("amfgate_upstream_call_seconds_bucket", label + ",le=\"" + le + "\"", latency_[i].load());
  }
  line("amfgate_upstream_call_seconds_bucket", label + ",le=\"+Inf\"", latency_count_.load());
  line("amfgate_upstream_call_seconds_count", label, latency_count_.load());
  out += "amfgate_upstream_call_seconds_sum{" + label + "} " +
         std::to_string(static_cast<double>(latency_micros_.load()) / 1e6) + "\n";
  std::size_t open, idle, inflight;
  bool up;
  {
    std::lock_guard lock(mutex_);
    open = open_;
    idle = idle_.size();
    inflight = inflight_;
    up = failures_ < settings_.failure_threshold;
  }
  line("amfgate_upstream_connections", label + ",state=\"open\"", open);
  line("amfgate_upstream_connections", label + ",state=\"idle\"", idle);
  line("amfgate_upstream_inflight", label, inflight);
  line("amfgate_upstream_connects_total", label, connects_.load());
  line("amfgate_upstream_up", label, up ? 1 : 0);
}

}  // namespace amfgate::bridge
