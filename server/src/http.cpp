// The server: I/O threads, the acceptor, signals and the drain. Each connection is served by
// connection.cpp.
#include "amfgate/server/http.hpp"

#include <spdlog/spdlog.h>

#include <sched.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <deque>
#include <mutex>
#include <thread>

#include "connection.hpp"

namespace amfgate::server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

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
        signals(signal_context, SIGINT, SIGTERM),
        timer(ioc),
        workers(worker_threads(cfg.workers),
                cfg.workers.max_queue ? cfg.workers.max_queue : 64 * worker_threads(cfg.workers)) {}

  /// The I/O context of the next connection: each in turn.
  net::io_context& next_io() { return *contexts[next_context++ % contexts.size()]; }

  /// Accepts on `acceptors[listener]`, for ever.
  void accept(unsigned listener) {
    ++accepting;
    acceptors[listener].async_accept(
        next_io(), [this, listener](beast::error_code ec, tcp::socket s) {
          --accepting;
          if (ec) {
            if (ec != net::error::operation_aborted) {
              st.log->warn("accept failed: {}", ec.message());
              accept(listener);
            }
            return;
          }
          std::make_shared<connection>(std::move(s), st, listener)->start();
          accept(listener);
        });
  }

  /// Listens on `where`: the next listener.
  tcp::endpoint listen(const config::listen_settings& where) {
    const tcp::endpoint ep(net::ip::make_address(where.address), where.port);
    tcp::acceptor& a = acceptors.emplace_back(ioc);
    a.open(ep.protocol());
    a.set_option(net::socket_base::reuse_address(true));
    a.bind(ep);
    a.listen(net::socket_base::max_listen_connections);
    return a.local_endpoint();
  }

  // Connections whose handshake the kernel completed but that were not accepted yet would be
  // reset by closing the acceptor, and a request a balancer sent on one is a 502 it may not
  // retry (a POST). So they are accepted before the close, and served like any other while
  // draining: answered with Connection: close.
  void accept_backlog() {
    for (unsigned listener = 0; listener < acceptors.size(); ++listener) {
      beast::error_code ec;
      acceptors[listener].non_blocking(true, ec);
      while (!ec) {
        tcp::socket s(next_io());
        acceptors[listener].accept(s, ec);
        if (!ec) std::make_shared<connection>(std::move(s), st, listener)->start();
      }
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
    if (st.routes.on_drain) st.routes.on_drain();
    {
      std::lock_guard lock(st.mutex);
      for (auto& w : st.connections) {
        if (auto c = w.lock()) c->close_if_idle();
      }
    }
    // After the idle ones are told to close: these have their first request on its way.
    accept_backlog();
    beast::error_code ignored;
    for (auto& a : acceptors) a.close(ignored);
    deadline = clock::now() + st.cfg.shutdown_grace;
    poll_drained();
  }

  void poll_drained() {
    // An accept the close cancelled must have returned too: on io_uring its cancellation
    // completes later, and a context destroyed with it pending reads its freed socket.
    if ((st.stats.open_connections() == 0 && accepting == 0) || clock::now() >= deadline) {
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
  std::deque<tcp::acceptor> acceptors;  ///< cfg.listen, then http_routes::also
  unsigned accepting = 0;               ///< accepts pending (on the first context)
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

int http_server::run(http_routes routes) {
  auto& i = *impl_;
  i.st.routes = std::move(routes);
  const tcp::endpoint ep = i.listen(i.st.cfg.listen);
  i.bound_port = ep.port();
  const auto pool = i.workers.snapshot();
  i.st.log->info("listening on {}:{} with {} threads and {} workers (queue {}), gateway paths:{}",
                 ep.address().to_string(), i.bound_port.load(), i.threads, pool.threads,
                 pool.max_queue, [&] {
                   std::string p;
                   for (const auto& g : i.st.cfg.gateway_paths) p += " " + g;
                   return p;
                 }());
  for (const auto& more : i.st.routes.also) {
    const tcp::endpoint also = i.listen(more);
    i.st.log->info("listening on {}:{} too (listener {})", also.address().to_string(), also.port(),
                   i.acceptors.size() - 1);
  }
  i.st.log->flush();  // the port, at once: scripts and tests read it (listen.port 0)
  for (unsigned listener = 0; listener < i.acceptors.size(); ++listener) i.accept(listener);
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
