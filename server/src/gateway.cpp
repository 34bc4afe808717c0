#include "amfgate/server/gateway.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory_resource>

#include "amf/base64.hpp"
#include "amfgate/services/quote.hpp"
#include "body_pool.hpp"
#include "request_target.hpp"

namespace amfgate::server {

namespace net = boost::asio;
using services::fault;

// A request's state. Shared, because a pool call that outlives its deadline still reads the
// packet (its arguments) until it returns: the body and the arena then live as long as it.
struct gateway::request final : messaging::reply_hooks {
  request(std::string b, exchange& e, std::size_t max_decoded)
      : body(std::move(b)),
        memory(e.memory ? e.memory : &amf::block_pool::shared()),
        cap(memory, max_decoded),
        doc(body.size() * 2 + 1024, &cap),
        ex(e) {}
  request(const request&) = delete;
  request& operator=(const request&) = delete;
  ~request() override { body_pool::give(std::move(body)); }

  // What a poll tells the exchange (messaging::channel).
  void waiting() override { ex.waiting(); }
  void parked(bool on) override {
    if (ex.on_park) ex.on_park(on);
  }
  void parked_for(double ms) override { ex.reply.parked_ms = ms; }
  void on_unwritten(std::function<void()> undo) override {
    if (!ex.reply.unwritten) {
      ex.reply.unwritten = std::move(undo);
      return;
    }
    ex.reply.unwritten = [before = std::move(ex.reply.unwritten), undo = std::move(undo)] {
      if (before) before();
      undo();
    };
  }
  std::string body;
  std::pmr::memory_resource* memory;  ///< upstream of this request's arenas
  decode_cap cap;                     ///< between `doc` and `memory`
  amf::document doc;
  amf::packet packet{doc.resource()};
  exchange& ex;                                         ///< only while `handle` runs
  std::vector<std::shared_ptr<amf::document>> results;  ///< pool calls' results, until encoded
  std::optional<services::session> sess;
  std::optional<services::principal> user;
  std::optional<fault> login_refused;  ///< why a login of this request did not log in
  bool password_checked = false;       ///< a request checks one password at most
  bool session_dirty = false;
  std::string store_error;  ///< why the session store could not be used, if it could not
  bool ran = false;         ///< a message has reached its handler
  /// A Flex message came as an anonymous AMF0 object (Ruffle's shape): the reply's
  /// collections go as arrays, which Ruffle can read (ruffle_collections_as_arrays).
  bool ruffle = false;
};

// A pool call's state, which its job shares: the worker builds its result in an arena of its
// own (if the deadline passes first, the request goes on with the packet's arena while the
// worker still writes), for the caller as the call began (a later login in the same packet
// does not change who this call runs as), with its context.
struct gateway::pool_call {
  explicit pool_call(const request& rq) : result(4096, rq.memory), user(rq.user) {}
  amf::document result;
  std::optional<services::principal> user;
  std::optional<services::call_context> ctx;
};

namespace {

// A NetConnection call's fault: the object of its onStatus answer.
amf::value status_object(amf::document& doc, const fault& f) {
  amf::object_node* o = doc.object();
  o->dynamic.push_back({"level", doc.string("error")});
  o->dynamic.push_back({"code", doc.string(f.code())});
  o->dynamic.push_back({"type", doc.string(f.code())});
  o->dynamic.push_back({"description", doc.string(f.what())});
  o->dynamic.push_back({"message", doc.string(f.what())});  // what BlazeDS sends, and clients read
  o->dynamic.push_back({"details", doc.string(f.detail())});
  return amf::value::of(o);
}

// A Flex call's fault: the ErrorMessage answering `in` (when it was a Flex message at all).
amf::value error_message(amf::document& doc, const std::optional<amf::flex::message>& in,
                         const fault& f, std::string_view message_id) {
  amf::flex::message e;
  e.kind = amf::flex::kind::error;
  if (in) {
    e.correlation_id = in->message_id;
    e.client_id = in->client_id;
    e.destination = in->destination;
  }
  e.message_id = message_id;
  e.timestamp = amf::flex::now_ms();
  e.fault_code = f.code();
  e.fault_string = f.what();
  e.fault_detail = f.detail();
  return amf::flex::make(doc, e);
}

// The Flex message of a request body: inside an argument list (Ruffle's is an ECMA array),
// or (some clients) bare.
amf::value flex_body(const amf::value& v) {
  if (const auto list = amf::as_list(v); list && list->size() == 1) return (*list)[0];
  return v;
}

std::string_view text(const amf::value* v) {
  return v && v->kind() == amf::type::string ? v->as_string() : std::string_view{};
}

// Arguments as a span: an array's items, a dense ECMA array's (Ruffle's argument lists,
// gathered into `doc`), or the one value sent bare.
std::span<const amf::value> arguments(const amf::value& v, amf::document& doc) {
  if (auto* a = v.as_array(); a && v.kind() == amf::type::array) {
    if (a->assoc.empty()) return {a->dense.data(), a->dense.size()};
    return {&v, 1};
  }
  if (const auto list = amf::as_list(v)) {
    amf::array_node* items = doc.array(list->size());
    for (std::size_t i = 0; i < list->size(); ++i) items->dense.push_back((*list)[i]);
    return {items->dense.data(), items->dense.size()};
  }
  return {&v, 1};
}

std::string seconds_text(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::ceil<std::chrono::seconds>(d).count()) + " s";
}

// The caller that messaging counts and binds a request's FlexClients to: its session if the
// store knows it (a made-up cookie is no session), and its address.
messaging::caller caller_of(const std::optional<services::session>& sess,
                            std::string_view client_address) {
  return {sess ? std::string_view(sess->id) : std::string_view(), address_of(client_address)};
}

fault throttled_fault(std::chrono::steady_clock::duration wait) {
  return fault("Client.Authentication",
               "Too many failed logins for this user or address; retry in " + seconds_text(wait),
               "retry_after_ms=" +
                   std::to_string(std::chrono::ceil<std::chrono::milliseconds>(wait).count()));
}

// Races `call` against `timeout`: past it the call is cancelled (a coroutine gets its
// cancellation; a pool job is dropped) and the client gets Server.Timeout. (Not the `||` of
// awaitable_operators: it waits for one *success*, so a call that throws would wait for the
// timer.) Cancelled from outside (the client went away), it ends with operation_aborted.
net::awaitable<amf::value> with_deadline(net::awaitable<amf::value> call,
                                         std::chrono::milliseconds timeout,
                                         std::string_view service, std::string_view method,
                                         metrics& stats) {
  if (timeout.count() == 0) co_return co_await std::move(call);
  const auto ex = co_await net::this_coro::executor;
  net::steady_timer timer(ex, timeout);
  auto [order, error, result, expired] =
      co_await net::experimental::make_parallel_group(
          net::co_spawn(ex, std::move(call), net::deferred), timer.async_wait(net::deferred))
          .async_wait(net::experimental::wait_for_one(), net::use_awaitable);
  if (order[0] == 0) {
    if (error) std::rethrow_exception(error);
    co_return result;
  }
  if (expired) throw boost::system::system_error(expired);  // cancelled from outside
  stats.call_timed_out();
  throw fault("Server.Timeout", std::string(service) + "." + std::string(method) +
                                    " did not answer within " + std::to_string(timeout.count()) +
                                    " ms");
}

}  // namespace

gateway::gateway(const config::gateway_config& cfg, services::registry& services,
                 messaging::channel& channel, services::session_store& sessions,
                 const services::authenticator& auth, worker_pool& workers, metrics& stats,
                 std::shared_ptr<spdlog::logger> log)
    : cfg_(cfg),
      services_(services),
      channel_(channel),
      sessions_(sessions),
      auth_(auth),
      workers_(workers),
      stats_(stats),
      limiter_({cfg.logins.max_failures, cfg.logins.window, cfg.logins.backoff}),
      log_(std::move(log)) {}

net::awaitable<void> gateway::handle(std::string body, exchange& ex) {
  ex.reply.body.clear();
  std::string busy;
  try {
    // In a block the thread recycles: one request's memory serves the next.
    auto rq = std::allocate_shared<request>(net::recycling_allocator<request>(), std::move(body),
                                            ex, cfg_.limits.max_decoded_bytes);
    amf::decode_options opt;
    opt.classes = &services_.classes();
    opt.max_depth = cfg_.limits.max_depth;
    amf::decode_error ec;
    rq->packet = amf::decode_packet(amf::as_bytes(rq->body), rq->doc, ec, opt);
    rq->cap.disarm();
    if (ec) {
      ex.reply.status = 400;
      ex.reply.content_type = "text/plain; charset=utf-8";
      ex.reply.body = "bad AMF packet: " + ec.message() + "\n";
      co_return;
    }
    co_await run_messages(rq);
    co_return;
  } catch (const pool_full& e) {
    // Nothing has run yet (run_messages answers a later one with a fault): try again later.
    busy = e.what();
  } catch (const over_budget& e) {
    busy = std::string(e.what()) + " (limits.max_inflight_bytes)";
  } catch (const decoded_too_large& e) {
    ex.reply.status = 413;
    ex.reply.content_type = "text/plain; charset=utf-8";
    ex.reply.body =
        std::string(e.what()) + " (" + std::to_string(cfg_.limits.max_decoded_bytes) + " bytes)\n";
    co_return;
  }
  if (auto lost = std::exchange(ex.reply.unwritten, nullptr)) lost();  // nothing it read is sent
  stats_.busy_refused();
  log_->warn("{}: 503: {}", ex.client_address, busy);
  ex.reply.status = 503;
  ex.reply.content_type = "text/plain; charset=utf-8";
  ex.reply.headers.emplace_back("Retry-After", "1");
  ex.reply.body = "server busy: " + busy + "; retry later\n";
}

net::awaitable<void> gateway::run_messages(request_ptr rq) {
  exchange& ex = rq->ex;
  if (!ex.session_id.empty()) {
    try {
      rq->sess = co_await sessions_.async_find(ex.session_id);
    } catch (const services::store_unavailable& e) {
      rq->store_error = e.what();  // calls that need no session still run
    }
    if (rq->sess) rq->user = rq->sess->user;
  }
  co_await apply_credentials(rq);

  amf::packet out(rq->doc.resource());
  out.version = rq->packet.version;
  for (const auto& b : rq->packet.bodies) {
    ++ex.reply.messages;
    bool failed = false;
    amf::value reply;
    std::string_view response_uri;  // BlazeDS answers Flex with "", PyAMF/Flash use "null"
    if (b.target == "null") {
      reply = (co_await flex_message(rq, flex_body(b.val), failed)).with_flags(amf::value::avmplus);
    } else {
      reply = co_await call_netconnection(rq, b, failed);
      response_uri = "null";
    }
    out.bodies.push_back(
        {rq->doc.copy(std::string(b.response) + (failed ? "/onStatus" : "/onResult")), response_uri,
         amf::unknown_length, reply});
    if (failed) ++ex.reply.faults;
  }
  if (rq->ruffle && cfg_.ruffle_collections_as_arrays) {
    for (auto& b : out.bodies) amf::flex::collections_as_arrays(b.val);
  }
  if (rq->session_dirty && rq->sess) {
    try {
      co_await sessions_.async_save(*rq->sess);
    } catch (const services::store_unavailable& e) {
      log_->warn("session {} not saved: {}", rq->sess->id, e.what());
    }
  }
  if (!ex.new_session_id.empty()) {
    out.headers.push_back({"AppendToGatewayUrl", false, amf::unknown_length,
                           rq->doc.string(";" + cfg_.sessions.cookie + "=" + ex.new_session_id)});
  }
  // Every length field says "unknown" (ff ff ff ff), as Flash Player's servers (BlazeDS, Red5)
  // answer; clients never read them.
  const auto max = cfg_.limits.max_response_bytes;
  auto too_large = [&](std::size_t i) {
    const fault f("Server.ResponseTooLarge",
                  "the answer is larger than the gateway sends (limits.max_response_bytes: " +
                      std::to_string(max) + " bytes)");
    const amf::body& call = rq->packet.bodies[i];
    log_->warn("{}: the answer to body {} ({}) is over {} bytes: answered with a fault",
               ex.client_address, i + 1, services::quoted(call.target), max);
    ++ex.reply.faults;
    amf::body b = out.bodies[i];
    b.target = rq->doc.copy(std::string(call.response) + "/onStatus");
    if (call.target == "null") {
      const auto in = amf::flex::read(flex_body(call.val), rq->doc);
      b.val = error_message(rq->doc, in, f, amf::flex::new_uuid()).with_flags(amf::value::avmplus);
    } else {
      b.val = status_object(rq->doc, f).with_flags(b.val.flags() & amf::value::avmplus);
    }
    return b;
  };
  // Taken only now: a poll parked until here holds none. The HTTP layer gives it back once
  // written.
  ex.reply.content_type = "application/x-amf";
  ex.reply.body = body_pool::take();
  // By reference: the std::function holds a pointer in place instead of a copy on the heap.
  amf::encode_packet(out, ex.reply.body, amf::length_fields::as_given, max, std::ref(too_large));
}

net::awaitable<void> gateway::apply_credentials(request_ptr rq) {
  const amf::object_node* credentials = nullptr;
  for (const auto& h : rq->packet.headers) {
    const amf::object_node* c = h.name == "Credentials" ? h.val.as_object() : nullptr;
    if (!c) continue;
    if (credentials && (text(c->find("userid")) != text(credentials->find("userid")) ||
                        text(c->find("password")) != text(credentials->find("password")))) {
      log_->info("{}: several different Credentials headers in one request: none is checked",
                 rq->ex.client_address);
      rq->login_refused = fault("Client.Authentication",
                                "several different Credentials headers in one request; none "
                                "was checked");
      drop_login(*rq);
      co_return;
    }
    credentials = c;
  }
  if (!credentials) co_return;
  const auto user = text(credentials->find("userid"));
  const auto password = text(credentials->find("password"));
  if (user.empty()) {  // setCredentials("", ""): how these applications log out
    if (!rq->user) co_return;
    try {
      co_await end_login(rq);
    } catch (const fault& f) {
      log_->warn("{}: logout by an empty Credentials header: {}", rq->ex.client_address, f.what());
      drop_login(*rq);
    }
    co_return;
  }
  co_await authenticate(rq, user, password);
}

net::awaitable<bool> gateway::authenticate(request_ptr rq, std::string_view user,
                                           std::string_view password) {
  if (rq->user && rq->user->name == user && rq->sess &&
      services::digest_matches(rq->sess->credential, user, password)) {
    co_return true;  // the login the session has: no second password check
  }
  // The result is named first: written `if (co_await login(...)) co_return true;`, GCC 12's
  // build of this coroutine trapped (SIGILL) at its first resume.
  const bool logged_in = co_await login(rq, user, password);
  if (!logged_in) drop_login(*rq);
  co_return logged_in;
}

void gateway::drop_login(request& rq) {
  rq.user.reset();
  if (rq.sess && rq.sess->user) {
    rq.sess->user.reset();
    rq.sess->credential.clear();
    rq.session_dirty = true;
  }
}

net::awaitable<bool> gateway::login(request_ptr rq, std::string_view user,
                                    std::string_view password) {
  const std::string address(address_of(rq->ex.client_address));
  const auto name = services::quoted(user);
  const std::size_t max = cfg_.limits.max_credential_bytes;
  if (user.size() > max || password.size() > max) {
    rq->login_refused =
        fault("Client.Authentication", "Invalid login: a user name or password longer than " +
                                           std::to_string(max) + " bytes");
    log_->info("login refused unchecked for user {} from {}: credentials over {} bytes", name,
               rq->ex.client_address, max);
    co_return false;
  }
  if (std::exchange(rq->password_checked, true)) {
    rq->login_refused =
        fault("Client.Authentication", "one password check per request: this request had one");
    co_return false;
  }
  if (const auto wait = limiter_.retry_after(address, user); wait.count() > 0) {
    stats_.login_throttled();
    rq->login_refused = throttled_fault(wait);
    log_->info("login refused unchecked for user {} from {}: too many failures, retry in {}", name,
               rq->ex.client_address, seconds_text(wait));
    co_return false;
  }
  std::optional<services::principal> p;
  if (!user.empty() && !password.empty()) {
    // The hash costs tens of milliseconds of CPU by design: never on an I/O thread.
    rq->ex.waiting();
    // A named closure: GCC 12 copies a closure that is a temporary of a co_await expression
    // byte for byte (a short std::string in it then points into the wrong frame).
    auto check = [this, who = std::string(user), secret = std::string(password)](
                     const std::atomic<bool>&) { return auth_.authenticate(who, secret); };
    p = co_await workers_.run(std::move(check));
  }
  if (!p) {
    limiter_.failed(address, user);
    rq->login_refused = fault("Client.Authentication", "Invalid login for user " + name);
    log_->info("login refused for user {} from {}", name, rq->ex.client_address);
    co_return false;
  }
  limiter_.succeeded(address, user);
  // A new session id at every login: an id the client came with (perhaps planted in a link by
  // someone else) never gains a principal. The old session ends.
  services::session fresh;
  try {
    fresh = co_await sessions_.async_create();
    if (rq->sess) {
      fresh.flex_client_id = rq->sess->flex_client_id;
      fresh.small_messages = rq->sess->small_messages;
      co_await sessions_.async_remove(rq->sess->id);
      // A FlexClient bound to the session follows it to its new id.
      if (const std::string& client = fresh.flex_client_id; !client.empty()) {
        co_await channel_.rebind(client, caller_of(rq->sess, rq->ex.client_address), fresh.id);
      }
    }
  } catch (const services::store_unavailable& e) {
    rq->store_error = e.what();
    log_->warn("login of user {} from {} failed: {}", name, rq->ex.client_address, e.what());
    co_return false;
  }
  rq->ex.new_session_id = fresh.id;
  fresh.user = p;
  fresh.credential = services::credential_digest(user, password);
  rq->sess = std::move(fresh);
  rq->user = p;
  rq->session_dirty = true;
  log_->info("user {} logged in from {}", name, rq->ex.client_address);
  co_return true;
}

void gateway::check_access(request& rq, std::string_view service, std::string_view method) {
  // "Service.method" is built on the stack while it fits: this runs for every call.
  std::array<char, 128> scratch;
  std::pmr::monotonic_buffer_resource memory(scratch.data(), scratch.size());
  std::pmr::string full(&memory);
  full.append(service).append(".").append(method);
  auto rule = cfg_.access.find(std::string_view(full));
  if (rule == cfg_.access.end()) rule = cfg_.access.find(service);
  if (rule == cfg_.access.end()) return;
  const auto& r = rule->second;
  if ((r.authenticated || !r.roles.empty()) && !rq.user) {
    if (!rq.store_error.empty()) throw services::session_store_fault(rq.store_error);
    if (const auto& no = rq.login_refused) {
      throw fault(no->code(),
                  std::string(no->what()).append("; ").append(full).append(" requires a login"),
                  no->detail());
    }
    throw fault("Client.Authentication", std::string(full) + " requires a login");
  }
  if (r.roles.empty()) return;
  for (const auto& role : r.roles) {
    if (rq.user->has_role(role)) return;
  }
  throw fault("Client.Authorization",
              ("user " + services::quoted(rq.user->name) + " may not call ").append(full));
}

net::awaitable<amf::value> gateway::invoke(request_ptr rq, std::string_view service,
                                           std::string_view method,
                                           std::span<const amf::value> args) {
  const services::method* m = services_.find(service, method);
  if (!m) {
    if (!services_.has_service(service)) {
      throw fault("Server.ResourceNotFound", "no service named " + services::quoted(service));
    }
    throw fault("Server.ResourceUnavailable", "service " + services::quoted(service) +
                                                  " has no method " + services::quoted(method));
  }
  check_access(*rq, service, method);
  const auto timeout = cfg_.call_timeout(service, method);
  // The call's context, built once: on this coroutine's frame, or, for the worker pool, in the
  // state the job shares (it may outlive this coroutine: past the deadline, the request goes on).
  std::optional<services::call_context> here;
  std::shared_ptr<pool_call> pooled;
  if (m->how == services::execution::pool) pooled = std::make_shared<pool_call>(*rq);
  services::call_context& ctx = pooled ? pooled->ctx.emplace(service, method, pooled->result)
                                       : here.emplace(service, method, rq->doc);
  ctx.request = &rq->packet;
  ctx.client_address = rq->ex.client_address;
  ctx.user_session = rq->sess;
  const auto& user = pooled ? pooled->user : rq->user;
  ctx.user = user ? &*user : nullptr;
  ctx.logger = log_.get();
  ctx.publisher = &channel_.messages();
  ctx.executor = co_await net::this_coro::executor;
  // Read now: once cancelled, every co_await of this coroutine throws at once.
  const auto cancellation = co_await net::this_coro::cancellation_state;
  if (timeout.count() > 0) ctx.deadline = std::chrono::steady_clock::now() + timeout;
  const bool earlier = std::exchange(rq->ran, true);
  if (m->how != services::execution::inline_) rq->ex.waiting();
  std::string failure;
  try {
    switch (m->how) {
      case services::execution::inline_:
        co_return m->invoke(ctx, args);
      case services::execution::coroutine:
        co_return co_await with_deadline(m->invoke_async(ctx, args), timeout, service, method,
                                         stats_);
      case services::execution::pool:
        co_return co_await with_deadline(run_on_pool(rq, pooled, *m, args), timeout, service,
                                         method, stats_);
    }
    throw std::logic_error("unknown execution kind");
  } catch (const fault&) {
    throw;
  } catch (const pool_full& e) {
    if (!earlier) throw;  // nothing has run: the request is answered 503
    stats_.busy_refused();
    throw fault("Server.Busy", std::string(e.what()) + "; retry later");
  } catch (const over_budget& e) {
    if (!earlier) throw;
    stats_.busy_refused();
    throw fault("Server.Busy", std::string(e.what()) + "; retry later");
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "a non-standard exception";
  }
  // The client went away: nothing is answered, the caller unwinds.
  if (cancellation.cancelled() != net::cancellation_type::none) {
    stats_.call_abandoned();
    log_->info("{}.{} from {} cancelled: the client went away", service, method,
               rq->ex.client_address);
    throw boost::system::system_error(net::error::operation_aborted);
  }
  log_->error("{}.{} from {} threw: {}", service, method, rq->ex.client_address, failure);
  throw fault("Server.Processing",
              "an error occurred in " + std::string(service) + "." + std::string(method),
              cfg_.debug ? failure : "");
}

net::awaitable<amf::value> gateway::run_on_pool(request_ptr rq, std::shared_ptr<pool_call> call,
                                                const services::method& m,
                                                std::span<const amf::value> args) {
  // The job keeps the request (its packet holds the arguments) and the call's state.
  auto job = [rq, call, handler = &m, args, log = log_](const std::atomic<bool>& abandoned) {
    services::call_context& c = *call->ctx;
    c.abandon_flag = &abandoned;
    struct late_check {  // however the handler ends, say when nobody waits for it any more
      const std::atomic<bool>& gone;
      spdlog::logger& log;
      services::call_context& c;
      ~late_check() {
        if (gone) {
          log.warn("{}.{} from {} finished after its caller stopped waiting: result dropped",
                   c.service, c.method, c.client_address);
        }
      }
    } late{abandoned, *log, c};
    return handler->invoke(c, args);
  };
  amf::value v = co_await workers_.run(std::move(job));
  // The result's arena lives until the answer is encoded.
  rq->results.push_back(std::shared_ptr<amf::document>(call, &call->result));
  co_return v;
}

net::awaitable<amf::value> gateway::call_netconnection(request_ptr rq, const amf::body& b,
                                                       bool& failed) {
  std::string_view target = b.target;
  std::string_view service = cfg_.default_service, method = target;
  if (auto dot = target.rfind('.'); dot != std::string_view::npos) {
    service = target.substr(0, dot);
    method = target.substr(dot + 1);
  }
  const auto args = arguments(b.val, rq->doc);
  // Answer in the encoding of the call, for each layout that clients send: AMF3 when the
  // arguments came behind the switch, one switch before each (Flash Player) or one before the
  // whole argument array (Apache Royale's AMFNetConnection: 11 09 ...); AMF0 arguments get
  // AMF0, in a version-0 packet (Ruffle) or a version-3 one. No arguments in a version-3
  // packet: AMF3, as Flash Player expects.
  bool amf3 = b.val.has_flag(amf::value::avmplus) || (rq->packet.version == 3 && args.empty());
  for (const auto& a : args) amf3 |= a.has_flag(amf::value::avmplus);
  auto encoded = [&](amf::value v) {
    return amf3 ? v.with_flags(v.flags() | amf::value::avmplus) : v;
  };
  std::optional<fault> refused;
  try {
    co_return encoded(co_await invoke(rq, service, method, args));
  } catch (const fault& f) {
    refused = f;
  }
  failed = true;
  log_->debug("{} from {}: {}: {}", services::escaped(target), rq->ex.client_address,
              refused->code(), refused->what());
  co_return encoded(status_object(rq->doc, *refused));
}

net::awaitable<amf::value> gateway::flex_message(request_ptr rq, const amf::value& v,
                                                 bool& failed) {
  amf::document& doc = rq->doc;
  const auto in = amf::flex::read(v, doc);
  const std::string_view message_id = amf::flex::new_uuid(doc);
  std::optional<fault> refused;
  if (!in) refused = fault("Client.Message.Encoding", "not a Flex message");
  if (in && in->anonymous && !v.has_flag(amf::value::avmplus)) rq->ruffle = true;

  amf::flex::message ack;
  bool small = rq->sess && rq->sess->small_messages;
  if (in) {
    ack.kind = amf::flex::kind::acknowledge;
    ack.correlation_id = in->message_id;
    ack.client_id = in->client_id.kind() == amf::type::string
                        ? in->client_id
                        : amf::value::string(amf::flex::new_uuid(doc));
    ack.message_id = message_id;
    ack.timestamp = amf::flex::now_ms();
    try {
      switch (in->kind) {
        case amf::flex::kind::remoting:
          ack.body = co_await invoke(rq, in->destination, in->method, arguments(in->body, doc));
          break;
        case amf::flex::kind::command:
          ack.body = co_await flex_command(rq, *in, ack, small);
          break;
        case amf::flex::kind::async:
          co_await channel_.send(*in, rq->user ? &*rq->user : nullptr);
          break;
        default:
          throw fault("Client.Message.Encoding",
                      "a client cannot send acknowledge or error messages");
      }
    } catch (const fault& f) {
      refused = f;
    }
  }
  if (!refused) co_return small ? amf::flex::make_small(doc, ack) : amf::flex::make(doc, ack);

  failed = true;
  log_->debug("Flex message from {}: {}: {}", rq->ex.client_address, refused->code(),
              refused->what());
  co_return error_message(doc, in, *refused, message_id);
}

net::awaitable<amf::value> gateway::flex_command(request_ptr rq, const amf::flex::message& in,
                                                 amf::flex::message& ack, bool& small) {
  using op = amf::flex::operation;
  if (messaging::channel::handles(in.command)) {
    messaging::command_context cx{rq->doc, caller_of(rq->sess, rq->ex.client_address),
                                  rq->user ? &*rq->user : nullptr, rq->packet.bodies.size() > 1,
                                  *rq};
    co_return co_await channel_.command(in, ack, small, cx);
  }
  switch (static_cast<op>(in.command)) {
    case op::client_ping:
    case op::trigger_connect:
      client_headers(*rq, in, ack, small);
      co_return amf::value::boolean(true);
    case op::login: {
      amf::value ok = co_await flex_login(rq, in);
      client_headers(*rq, in, ack, small);  // into the session the login made
      co_return ok;
    }
    case op::logout:
      co_return co_await flex_logout(rq);
    case op::client_sync:
    case op::cluster_request:
    case op::subscription_invalidate:
      co_return amf::value::null();
    default:
      throw fault("Server.Processing",
                  "unknown CommandMessage operation " + std::to_string(in.command));
  }
}

void gateway::client_headers(request& rq, const amf::flex::message& in, amf::flex::message& ack,
                             bool& small) {
  // The FlexClient id: kept from the client, or from the session, or made here.
  amf::document& doc = rq.doc;
  std::string dsid;
  const amf::value h = in.header("DSId");
  if (h.kind() == amf::type::string && h.as_string() != "nil") dsid = h.as_string();
  if (dsid.empty() && rq.sess) dsid = rq.sess->flex_client_id;
  if (dsid.empty()) dsid = amf::flex::new_uuid();
  if (rq.sess && rq.sess->flex_client_id != dsid) {
    rq.sess->flex_client_id = dsid;
    rq.session_dirty = true;
  }
  amf::flex::set_header(doc, ack, "DSId", doc.string(dsid));
  // Small messages are advertised only when they are on: a client told DSMessagingVersion 1
  // sends its polls as small CommandMessageExt, which Ruffle writes as an empty object.
  if (!cfg_.small_messages) return;
  amf::flex::set_header(doc, ack, "DSMessagingVersion", amf::value::number(1.0));
  const amf::value version = in.header("DSMessagingVersion");
  // Small messages need no server session: this answer is small, and a login's session (made
  // by this request or later) remembers it. Anonymous clients get standard acks to later
  // calls, which every Flex client reads as well.
  if (version.is_numeric() && version.to_double() >= 1.0) {
    small = true;
    if (rq.sess && !rq.sess->small_messages) {
      rq.sess->small_messages = true;
      rq.session_dirty = true;
    }
  }
}

net::awaitable<amf::value> gateway::flex_login(request_ptr rq, const amf::flex::message& in) {
  const std::string cred = amf::base64_decode(text(&in.body)).value_or("");
  const auto colon = cred.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == cred.size()) {
    throw fault("Client.Authentication", "Invalid credential format.");
  }
  const std::string_view user = std::string_view(cred).substr(0, colon);
  const std::string_view password = std::string_view(cred).substr(colon + 1);
  // BlazeDS's LoginManager refuses another user over a session's login (10054); the same
  // user with the same password is the login the session has.
  if (rq->user && rq->user->name != user) {
    throw fault("Client.Authentication",
                "Cannot re-authenticate in the same session: logged in as " +
                    services::quoted(rq->user->name) + "; log out first.");
  }
  if (!co_await authenticate(rq, user, password)) {
    if (!rq->store_error.empty()) throw services::session_store_fault(rq->store_error);
    throw rq->login_refused.value_or(fault("Client.Authentication", "Invalid login."));
  }
  co_return rq->doc.string("success");
}

net::awaitable<amf::value> gateway::flex_logout(request_ptr rq) {
  co_await end_login(rq);
  co_return rq->doc.string("success");
}

net::awaitable<void> gateway::end_login(request_ptr rq) {
  if (!rq->sess && !rq->store_error.empty()) throw services::session_store_fault(rq->store_error);
  if (rq->sess) {
    try {
      co_await sessions_.async_remove(rq->sess->id);
    } catch (const services::store_unavailable& e) {
      throw services::session_store_fault(e.what());  // not ended everywhere: the client must know
    }
    // The subscriptions made under this login end with it.
    if (const std::string& client = rq->sess->flex_client_id; !client.empty()) {
      co_await channel_.logout(client, caller_of(rq->sess, rq->ex.client_address));
    }
    rq->sess.reset();
    rq->ex.session_ended = true;
  }
  rq->user.reset();
}

}  // namespace amfgate::server
