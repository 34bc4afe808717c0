#include "amfgate/server/redis_client.hpp"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>
#include <optional>
#include <thread>

#include "amfgate/services/session.hpp"

namespace amfgate::server {

using services::store_unavailable;

namespace net = boost::asio;
using clock = std::chrono::steady_clock;

namespace {

redis_value copied(const redisReply& r) {
  redis_value v;
  switch (r.type) {
    case REDIS_REPLY_NIL:
      v.type = redis_value::kind::nil;
      break;
    case REDIS_REPLY_STRING:
      v.type = redis_value::kind::string;
      break;
    case REDIS_REPLY_INTEGER:
      v.type = redis_value::kind::integer;
      v.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      v.type = redis_value::kind::array;
      break;
    case REDIS_REPLY_STATUS:
      v.type = redis_value::kind::status;
      break;
    default:  // an error: AUTH's and SELECT's only (others fail their command)
      v.type = redis_value::kind::other;
  }
  if (r.str) v.str.assign(r.str, r.len);
  for (std::size_t i = 0; i < r.elements; ++i) v.elements.push_back(copied(*r.element[i]));
  return v;
}

}  // namespace

// One command on its way: what the caller awaits. Completed once, on the store's thread.
struct redis_op {
  virtual ~redis_op() = default;
  /// `error` empty: `reply` is the answer.
  virtual void complete(std::string error, redis_value reply) = 0;
  clock::time_point sent = clock::now();
};

template <class Handler>
struct redis_op_for final : redis_op {
  explicit redis_op_for(Handler&& h)
      : handler(std::move(h)), work(net::make_work_guard(net::get_associated_executor(handler))) {}
  void complete(std::string error, redis_value reply) override {
    auto ex = work.get_executor();
    net::post(ex, [h = std::move(handler), w = std::move(work), error = std::move(error),
                   reply = std::move(reply)]() mutable {
      std::exception_ptr e;
      if (!error.empty()) e = std::make_exception_ptr(store_unavailable(error));
      std::move(h)(e, std::move(reply));
    });
  }
  Handler handler;
  net::executor_work_guard<net::associated_executor_t<Handler>> work;
};

// AUTH and SELECT, sent first on a new connection: an error drops the connection.
struct setup_op final : redis_op {
  explicit setup_op(std::function<void(const std::string&)> f) : on_error(std::move(f)) {}
  void complete(std::string error, redis_value reply) override {
    if (error.empty() && reply.type == redis_value::kind::other) on_error(reply.str);
  }
  std::function<void(const std::string&)> on_error;
};

struct redis_client::impl {
  explicit impl(redis_options o)
      : opt(std::move(o)),
        work(net::make_work_guard(own)),
        strand(net::make_strand(net::any_io_executor(own.get_executor()))),
        thread([this] { own.run(); }) {
    watchdog.emplace(strand);
  }
  ~impl() {
    if (attached) {  // the server's threads have stopped: nothing else runs
      close(true);
      return;
    }
    net::post(own, [this] { close(true); });
    work.reset();
    thread.join();
  }

  // Closes the connection (what is in flight fails); `for_good`: nothing is sent again.
  void close(bool for_good) {
    stopping = for_good;
    watchdog->cancel();
    if (ac) redisAsyncFree(ac);
  }

  void attach(net::any_io_executor ex) {
    net::post(own, [this] { close(false); });  // the next command connects on `ex`
    work.reset();
    thread.join();
    strand = net::make_strand(std::move(ex));
    watchdog.emplace(strand);
    attached = true;
  }

  std::string where() const { return "redis " + opt.host + ":" + std::to_string(opt.port); }

  /// Sends `args`; the awaiting coroutine resumes on its own executor with the reply.
  net::awaitable<redis_value> command(std::vector<std::string> args) {
    return net::async_initiate<const net::use_awaitable_t<>, void(std::exception_ptr, redis_value)>(
        [this](auto handler, std::vector<std::string> a) {
          using H = decltype(handler);
          auto op = std::make_unique<redis_op_for<H>>(std::move(handler));
          net::post(strand, [this, op = std::move(op), a = std::move(a)]() mutable {
            send(std::move(op), a);
          });
        },
        net::use_awaitable, std::move(args));
  }

  // Everything below runs on the strand.

  void send(std::unique_ptr<redis_op> op, const std::vector<std::string>& args) {
    if (down && clock::now() < retry_at) return op->complete(where() + ": " + last_error, {});
    if (!ac) connect();
    if (!ac) return op->complete(where() + ": " + last_error, {});
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    if (redisAsyncCommandArgv(ac, on_reply, op.get(), static_cast<int>(argv.size()), argv.data(),
                              lengths.data()) != REDIS_OK) {
      return op->complete(where() + ": " + (ac->errstr ? ac->errstr : "cannot send"), {});
    }
    op->sent = clock::now();
    inflight.push_back(std::move(op));
    watch();
  }

  void connect() {
    ac = redisAsyncConnect(opt.host.c_str(), static_cast<int>(opt.port));
    if (!ac || ac->err) {
      const std::string why = ac ? ac->errstr : "cannot allocate a connection";
      if (ac) redisAsyncFree(ac);
      ac = nullptr;
      return failed(why);
    }
    ac->data = this;
    ac->ev.data = this;
    ac->ev.addRead = [](void* p) { static_cast<impl*>(p)->want(true, true); };
    ac->ev.delRead = [](void* p) { static_cast<impl*>(p)->want(true, false); };
    ac->ev.addWrite = [](void* p) { static_cast<impl*>(p)->want(false, true); };
    ac->ev.delWrite = [](void* p) { static_cast<impl*>(p)->want(false, false); };
    ac->ev.cleanup = [](void* p) { static_cast<impl*>(p)->freed(); };
    fd.emplace(strand.get_inner_executor(), ac->c.fd);  // see arm()
    redisAsyncSetConnectCallback(ac, [](const redisAsyncContext* c, int status) {
      auto* self = static_cast<impl*>(c->data);
      if (status != REDIS_OK) self->lost(c->errstr ? c->errstr : "cannot connect");
    });
    redisAsyncSetDisconnectCallback(ac, [](const redisAsyncContext* c, int status) {
      if (status != REDIS_OK) static_cast<impl*>(c->data)->lost(c->errstr ? c->errstr : "closed");
    });
    connecting_since = clock::now();
    connected = false;
    auto setup = [this](std::vector<const char*> argv) {
      auto op = std::make_unique<setup_op>(
          [this, name = std::string(argv[0])](const std::string& e) { drop(name + ": " + e); });
      redisAsyncCommandArgv(ac, on_reply, op.get(), static_cast<int>(argv.size()), argv.data(),
                            nullptr);
      inflight.push_back(std::move(op));
    };
    if (!opt.password.empty()) setup({"AUTH", opt.password.c_str()});
    if (opt.db != 0) {
      const std::string db = std::to_string(opt.db);
      setup({"SELECT", db.c_str()});
    }
    watch();
  }

  static void on_reply(redisAsyncContext* c, void* r, void* privdata) {
    auto* self = static_cast<impl*>(c->data);
    auto& q = self->inflight;
    if (q.empty() || q.front().get() != privdata) return;  // not ours (cannot happen)
    std::unique_ptr<redis_op> op = std::move(q.front());
    q.pop_front();
    if (!r) return op->complete(self->where() + ": " + self->lost_reason(), {});
    self->connected = true;
    self->reachable();
    const auto& reply = *static_cast<redisReply*>(r);
    if (reply.type == REDIS_REPLY_ERROR && !dynamic_cast<setup_op*>(op.get())) {
      return op->complete(self->where() + ": " + std::string(reply.str, reply.len), {});
    }
    op->complete({}, copied(reply));
  }

  // hiredis wants (or no longer wants) to know when the socket is readable or writable.
  void want(bool read, bool on) {
    (read ? want_read : want_write) = on;
    if (!read && on && connected) return flush_soon();
    arm(read);
  }
  // A connected socket is nearly always writable: the commands of this turn go out together
  // once it ends, without a round through the reactor first; only a full socket buffer waits.
  void flush_soon() {
    if (flush_posted) return;
    flush_posted = true;
    net::post(strand, [this] {
      flush_posted = false;
      if (!ac || !want_write) return;
      redisAsyncHandleWrite(ac);
      if (ac && want_write) arm(false);
    });
  }
  void arm(bool read) {
    bool& waiting = read ? reading : writing;
    if (waiting || !(read ? want_read : want_write) || !fd) return;
    waiting = true;
    // The wait completes on the descriptor's plain executor and then enters the strand. On
    // io_uring, a wait that the close at exit cancelled is destroyed with the I/O context,
    // after the strand's service: holding the strand there would touch it once freed.
    fd->async_wait(
        read ? net::posix::stream_descriptor::wait_read : net::posix::stream_descriptor::wait_write,
        [this, read](boost::system::error_code ec) {
          net::dispatch(strand, [this, read, ec] {
            (read ? reading : writing) = false;
            if (ec || !ac) return;
            if (read) {
              redisAsyncHandleRead(ac);
            } else {
              redisAsyncHandleWrite(ac);
            }
            if (ac) arm(read);
          });
        });
  }

  // hiredis frees the context: its socket is hiredis's to close, not ours.
  void freed() {
    if (fd) {
      fd->release();
      fd.reset();
    }
    ac = nullptr;
    reading = writing = want_read = want_write = false;
  }

  // The connection broke. In-flight commands have been (or are being) failed by hiredis.
  // Closed while nothing was asked of it (Redis restarted, or its idle timeout): no outage,
  // the next command connects again.
  void lost(const std::string& why) {
    lost_why = why;
    if (!inflight.empty() || !connected) failed(why);
  }
  std::string lost_reason() const { return lost_why.empty() ? "connection lost" : lost_why; }

  // Drops the connection now (a timeout, a refused AUTH): what is in flight fails.
  void drop(const std::string& why) {
    if (!ac) return;
    lost_why = why;
    failed(why);
    redisAsyncFree(ac);  // deferred by hiredis when called from within its callback
  }

  void failed(const std::string& why) {
    last_error = why;
    retry_at = clock::now() + std::chrono::seconds(1);
    if (!down && opt.on_state_change) opt.on_state_change(false, where() + ": " + why);
    down = true;
  }
  void reachable() {
    lost_why.clear();
    if (down && opt.on_state_change) opt.on_state_change(true, where());
    down = false;
  }

  // Connect and command timeouts: one timer, armed while anything is awaited.
  void watch() {
    if (watching || stopping) return;
    watching = true;
    watchdog->expires_after(std::min(opt.connect_timeout, opt.command_timeout) / 4 +
                            std::chrono::milliseconds(1));
    watchdog->async_wait([this](boost::system::error_code ec) {
      watching = false;
      if (ec || !ac) return;
      const auto now = clock::now();
      if (!connected && now - connecting_since > opt.connect_timeout) {
        return drop("no connection within " + std::to_string(opt.connect_timeout.count()) + " ms");
      }
      if (!inflight.empty() && now - inflight.front()->sent > opt.command_timeout) {
        return drop("no reply within " + std::to_string(opt.command_timeout.count()) + " ms");
      }
      if (!inflight.empty() || !connected) watch();
    });
  }

  redis_options opt;
  net::io_context own;  ///< the store's own thread's, until `attach`
  net::executor_work_guard<net::io_context::executor_type> work;
  net::strand<net::any_io_executor> strand;  ///< where all of the below is used
  std::optional<net::steady_timer> watchdog;
  bool attached = false;
  redisAsyncContext* ac = nullptr;
  std::optional<net::posix::stream_descriptor> fd;
  bool reading = false, writing = false, want_read = false, want_write = false;
  bool connected = false, watching = false, stopping = false, flush_posted = false;
  clock::time_point connecting_since;
  std::deque<std::unique_ptr<redis_op>> inflight;  // in the order sent: Redis answers so
  bool down = false;
  std::string last_error, lost_why;
  clock::time_point retry_at;
  std::thread thread;  // last: starts once the rest is made
};

redis_client::redis_client(redis_options options)
    : impl_(std::make_unique<impl>(std::move(options))) {}

redis_client::~redis_client() = default;

net::awaitable<redis_value> redis_client::command(std::vector<std::string> args) {
  return impl_->command(std::move(args));
}

void redis_client::attach(net::any_io_executor executor) {
  impl_->attach(std::move(executor));
}

const redis_options& redis_client::options() const {
  return impl_->opt;
}

std::string redis_client::where() const {
  return impl_->where();
}

net::strand<net::any_io_executor> redis_client::strand() const {
  return impl_->strand;
}

}  // namespace amfgate::server
