#include "amfgate/messaging/channel.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <optional>
#include <span>
#include <vector>

namespace amfgate::messaging {

namespace net = boost::asio;
using services::fault;
using op = amf::flex::operation;

namespace {

std::string_view header_text(const amf::flex::message& m, std::string_view name) {
  const amf::value h = m.header(name);
  return h.kind() == amf::type::string ? h.as_string() : std::string_view();
}

// Views into the request: an array of 500 references to one string is not copied 500 times.
std::vector<std::string_view> header_strings(const amf::flex::message& m, std::string_view name) {
  std::vector<std::string_view> out;
  const amf::value h = m.header(name);
  if (const auto list = amf::as_list(h)) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].kind() == amf::type::string) out.push_back((*list)[i].as_string());
    }
  }
  return out;
}

}  // namespace

channel::channel(broker& b, services::session_store& sessions, std::size_t max_response_bytes)
    : broker_(b), sessions_(sessions), max_response_bytes_(max_response_bytes) {}

bool channel::handles(std::int32_t command) {
  switch (static_cast<op>(command)) {
    case op::poll:
    case op::subscribe:
    case op::unsubscribe:
    case op::multi_subscribe:
    case op::disconnect:
      return true;
    default:
      return false;
  }
}

net::awaitable<amf::value> channel::command(const amf::flex::message& in, amf::flex::message& reply,
                                            bool& small, command_context& cx) {
  switch (static_cast<op>(in.command)) {
    case op::poll:
      co_return co_await poll(in, reply, small, cx);
    case op::subscribe:
    case op::unsubscribe:
    case op::multi_subscribe:
      co_await subscription(in, reply, cx);
      co_return amf::value::null();
    case op::disconnect: {
      const amf::value dsid = in.header("DSId");
      if (dsid.kind() == amf::type::string) {
        const std::string_view client = dsid.as_string();
        co_await load_owned(client, cx.who);
        broker_.disconnect(client, cx.who);
        co_await broker_.save(client);
      }
      co_return amf::value::null();
    }
    default:
      throw fault("Server.Processing",
                  "not a messaging command: operation " + std::to_string(in.command));
  }
}

net::awaitable<void> channel::send(const amf::flex::message& in, const services::principal* user) {
  flex_client(in);  // 10030 without a DSId, as BlazeDS
  co_await broker_.send(in, user);
}

std::string_view channel::flex_client(const amf::flex::message& in) {
  const amf::value h = in.header("DSId");
  if (h.kind() != amf::type::string || h.as_string().empty() || h.as_string() == "nil") {
    throw fault("Server.Processing",
                "the message has no DSId header (10030): connect the channel (a ping) first");
  }
  return h.as_string();
}

net::awaitable<void> channel::subscription(const amf::flex::message& in,
                                           const amf::flex::message& ack, command_context& cx) {
  const std::string_view client = flex_client(in);
  co_await load_owned(client, cx.who);
  const std::string_view id = ack.client_id.as_string();  // the client's, or a new one
  const auto max_frequency = [&] {
    return broker::consumer_frequency(in.header("DSMaxFrequency"));
  };
  switch (static_cast<op>(in.command)) {
    case op::subscribe: {
      const std::string_view subtopic = header_text(in, "DSSubtopic");
      const std::span<const std::string_view> asked(&subtopic, 1);
      co_await broker_.admit_subscribe(in.destination, asked, cx.user);
      broker_.subscribe(client, id, in.destination, subtopic, header_text(in, "DSSelector"),
                        max_frequency(), cx.user, cx.who);
      break;
    }
    case op::unsubscribe: {
      const amf::value durable = in.header("DSPreserveDurable");
      broker_.unsubscribe(client, id, header_text(in, "DSSubtopic"), header_text(in, "DSSelector"),
                          cx.who, durable.kind() == amf::type::boolean && durable.as_bool());
      break;
    }
    default: {
      const auto add = header_strings(in, "DSAddSub");
      const auto subtopics = broker_.entry_subtopics(add);
      co_await broker_.admit_subscribe(in.destination, subtopics, cx.user);
      broker_.multi_subscribe(client, id, in.destination, add, header_strings(in, "DSRemSub"),
                              max_frequency(), cx.user, cx.who);
    }
  }
  co_await broker_.save(client);
}

net::awaitable<amf::value> channel::poll(const amf::flex::message& in, amf::flex::message& reply,
                                         bool& small, command_context& cx) {
  const auto& settings = broker_.settings();
  const std::string_view client = flex_client(in);
  // A general poll (no clientId) reads every subscription of the client and may park;
  // Consumer.receive() names one and never parks (BlazeDS AbstractEndpoint).
  const bool general = in.client_id.kind() != amf::type::string;
  if (general) {
    reply.correlation_id = {};
    reply.client_id = amf::value::null();
  }
  // Messages (and DSNoOpPoll) come in a CLIENT_SYNC command, always in full form (BlazeDS:
  // only POLL has a small form).
  const auto client_sync = [&] {
    reply.kind = amf::flex::kind::command;
    reply.command = static_cast<std::int32_t>(op::client_sync);
    small = false;
  };
  const std::string_view subscription_id = general ? "" : in.client_id.as_string();
  if (needs_loading(client, cx.who)) co_await load_owned(client, cx.who);
  // A reply carries at most max_response_bytes, less room for the packet's other answers.
  const std::size_t max_bytes =
      max_response_bytes_ - std::min<std::size_t>(max_response_bytes_ / 2, 64 << 10);
  // (Through the share only with one: a coroutine's frame is an allocation.)
  broker::batch b;
  if (broker_.shared()) {
    b = co_await broker_.async_poll(client, subscription_id, cx.who, max_bytes);
  } else {
    b = broker_.poll(client, subscription_id, cx.who, max_bytes);
  }
  // With long-polling on, the reply says when to poll next: at once (client_wait) after a
  // poll that could park, later (busy_wait) after one that could not (in a batch, or past
  // the limits).
  const bool long_polling = general && settings.poll_wait.count() > 0;
  std::optional<std::chrono::milliseconds> poll_wait;
  if (long_polling) poll_wait = cx.batched ? settings.busy_wait : settings.client_wait;
  const auto nothing = [&] {
    return b.messages.empty() && b.lost.empty() && b.invalidated.empty();
  };
  if (long_polling && !cx.batched && nothing()) {
    auto w = broker_.park(client, cx.who, co_await net::this_coro::executor);
    if (!w) poll_wait = settings.busy_wait;
    if (w) {
      cx.hooks.waiting();  // a client that hangs up ends the wait
      cx.hooks.parked(true);
      struct unpark {
        broker& m;
        std::shared_ptr<broker::waiter> w;
        reply_hooks& hooks;
        ~unpark() {
          m.unpark(w);
          hooks.parked(false);
        }
      } parked{broker_, w, cx.hooks};
      const auto started = std::chrono::steady_clock::now();
      const auto until = started + settings.poll_wait;
      bool released = false;
      for (;;) {
        // (Or until what its frequency held back is due.)
        const broker::wake why = co_await w->wait_until(std::min(until, b.due));
        if (why == broker::wake::replaced) {
          // Another poll of this client took over (or it disconnected): this reply is
          // ignored, and no poll is scheduled from it (DSNoOpPoll).
          client_sync();
          amf::flex::set_header(cx.doc, reply, "DSNoOpPoll", amf::value::boolean(true));
          released = true;
          break;
        }
        const std::string_view all;  // a general poll: every subscription
        if (broker_.shared()) {
          b = co_await broker_.async_poll(client, all, cx.who, max_bytes);
        } else {
          b = broker_.poll(client, all, cx.who, max_bytes);
        }
        if (!nothing() || why == broker::wake::drained ||
            std::chrono::steady_clock::now() >= until) {
          break;
        }
      }
      cx.hooks.parked_for(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count());
      if (released) co_return amf::value::null();
    }
  }
  if (poll_wait) {
    amf::flex::set_header(cx.doc, reply, "DSPollWait",
                          amf::value::integer(static_cast<std::int32_t>(poll_wait->count())));
  }
  if (!b.lost.empty()) {
    // amfgate's own header: what fell out of the destination's retention before this client
    // read it, by subscription (clientId): count.
    amf::object_node* lost = cx.doc.object();
    for (const auto& [id, n] : b.lost) {
      lost->dynamic.push_back({cx.doc.copy(id), amf::value::number(static_cast<double>(n))});
    }
    amf::flex::set_header(cx.doc, reply, "AMFGateMessagesLost", amf::value::of(lost));
  }
  if (b.messages.empty() && b.invalidated.empty()) co_return amf::value::null();  // an empty ack
  if (!b.messages.empty()) {
    // Until the reply is written, what it carries is read again by a poll should it not be.
    // (The executor is read first: GCC 12 copies a closure built within a co_await
    // expression byte for byte, and the short strings in it then point into the wrong object.)
    const auto executor = co_await net::this_coro::executor;
    cx.hooks.on_unwritten([&m = broker_, executor, id = std::string(client),
                           cursors = std::move(b.cursors)]() mutable {
      net::co_spawn(executor, m.rewind(std::move(id), std::move(cursors)), net::detached);
    });
  }
  client_sync();
  // The subscriptions that ended first (SUBSCRIPTION_INVALIDATE), then the messages.
  amf::array_node* messages = cx.doc.array(b.invalidated.size() + b.messages.size());
  for (const auto& e : b.invalidated) messages->dense.push_back(broker::notice_for(cx.doc, e));
  for (const auto& d : b.messages) messages->dense.push_back(broker::message_for(cx.doc, d));
  co_return amf::value::of(messages);
}

net::awaitable<std::unique_ptr<stream>> channel::open_stream(std::string_view client,
                                                             std::string_view session_id,
                                                             std::string_view address,
                                                             std::string_view user_agent) {
  // Bound to a session, a FlexClient's stream is that session's only: as for a poll.
  const std::string session = co_await known_session(session_id);
  co_await check_owner(client, session);
  auto w = broker_.open_stream(client, {session, address}, co_await net::this_coro::executor,
                               max_response_bytes_);
  co_return std::make_unique<stream>(broker_, std::move(w), amf::flex::new_uuid(),
                                     kickstart_bytes(user_agent),
                                     broker_.settings().stream_heartbeat, max_response_bytes_);
}

net::awaitable<bool> channel::close_stream(std::string_view client, std::string_view session_id,
                                           std::string_view address) {
  const std::string session = co_await known_session(session_id);
  co_await check_owner(client, session);
  co_return broker_.close_stream(client, {session, address});
}

net::awaitable<void> channel::logout(std::string_view client, caller who) {
  co_await broker_.load(client, who);
  if (broker_.owner(client) == who.session) {
    broker_.end(client);
    co_await broker_.save(client);
  }
}

net::awaitable<void> channel::rebind(std::string_view client, caller who, std::string_view to) {
  co_await broker_.load(client, who);
  broker_.rebind(client, who.session, to);
  co_await broker_.save(client);
}

net::awaitable<std::string> channel::known_session(std::string_view id) {
  if (id.empty()) co_return std::string();
  std::optional<services::session> s;
  try {
    s = co_await sessions_.async_find(std::string(id));
  } catch (const services::store_unavailable& e) {
    throw services::session_store_fault(e.what());
  }
  co_return s ? s->id : std::string();
}

net::awaitable<void> channel::check_owner(std::string_view client, std::string_view session) {
  const std::string owner = broker_.owner(client);
  if (owner.empty() || owner == session) co_return;
  const std::string live = co_await known_session(owner);
  if (!live.empty()) co_return;
  broker_.end(client);  // its session ended, and its subscriptions with it
  co_await broker_.save(client);
}

bool channel::needs_loading(std::string_view client, const caller& who) const {
  return broker_.shared() || !broker_.owned_by(client, who.session);
}

net::awaitable<void> channel::load_owned(std::string_view client, caller who) {
  co_await broker_.load(client, who);
  co_await check_owner(client, who.session);
}

}  // namespace amfgate::messaging
