#include "amfgate/messaging/broker.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <charconv>
#include <deque>
#include <set>
#include <span>
#include <unordered_map>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/flex.hpp"
#include "amfgate/messaging/shared_store.hpp"
#include "amfgate/messaging/subtopic.hpp"
#include "amfgate/services/quote.hpp"
#include "amfgate/services/session.hpp"

namespace amfgate::messaging {

using services::fault;
using services::principal;
using services::quoted;
using services::store_unavailable;

namespace {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

fault not_subscribed(std::string_view what) {
  return fault("Server.Processing.NotSubscribed", std::string(what));
}

// Headers that stay with the sender: its FlexClient, its channel, its credentials.
bool private_header(std::string_view name) {
  return name == "DSId" || name == "DSEndpoint" || name.starts_with("DSRemoteCredentials");
}

selector_value property(const amf::value& v) {
  switch (v.kind()) {
    case amf::type::string:
      return std::string(v.as_string());
    case amf::type::boolean:
      return v.as_bool();
    case amf::type::integer:
    case amf::type::number:
      return v.to_double();
    default:
      return std::monostate{};
  }
}

selector parse_selector(std::string_view text) {
  try {
    return selector(text);
  } catch (const selector_error& e) {
    throw fault("Server.Processing",
                "the selector expression " + quoted(text) + " is not valid (10550): " + e.what());
  }
}

fault bad_frequency(std::string_view what) {
  return fault("Server.Processing", "maxFrequency " + std::string(what) +
                                        " refused: a Consumer may ask for 1 to " +
                                        std::to_string(broker::max_consumer_frequency) +
                                        " messages a second (or leave it out for no bound)");
}

// `as_given`: how the fault names the value.
std::uint32_t frequency(double v, std::string_view as_given) {
  if (!(v >= 1 && v <= broker::max_consumer_frequency) || v != static_cast<std::uint32_t>(v)) {
    throw bad_frequency(as_given);
  }
  return static_cast<std::uint32_t>(v);
}

// The smaller bound of two, where 0 is none.
std::uint32_t tighter(std::uint32_t a, std::uint32_t b) {
  return a == 0 ? b : b == 0 ? a : std::min(a, b);
}

// A MULTI_SUBSCRIBE entry: "subtopic_;_selector[_;_maxFrequency]"; nullopt without "_;_"
// (BlazeDS ignores those).
struct multi_entry {
  std::string_view subtopic, selector;
  std::uint32_t max_frequency = 0;
};
std::optional<multi_entry> entry(std::string_view e) {
  static constexpr std::string_view sep = "_;_";
  const auto first = e.find(sep);
  if (first == std::string_view::npos) return std::nullopt;
  const std::string_view rest = e.substr(first + sep.size());
  const auto second = rest.find(sep);
  multi_entry out{e.substr(0, first), rest.substr(0, second)};
  if (second == std::string_view::npos) return out;
  const std::string_view f = rest.substr(second + sep.size());
  if (f.empty()) return out;
  std::uint32_t n = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
  if (ec != std::errc() || end != f.data() + f.size()) {
    throw bad_frequency(quoted(f.substr(0, 32)));
  }
  out.max_frequency = frequency(n, quoted(f));
  return out;
}

// `entry`, with its subtopic's length bounded as a selector's.
std::optional<multi_entry> bounded_entry(std::string_view e) {
  auto out = entry(e);
  if (out && out->subtopic.size() > selector::max_length) {
    throw fault("Server.Processing",
                "a subtopic longer than " + std::to_string(selector::max_length) + " bytes");
  }
  return out;
}

// MULTI_SUBSCRIBE's entries are bounded before any is parsed or copied.
void check_entry_count(std::size_t add, std::size_t remove, std::size_t max) {
  if (add > max || remove > max) {
    throw fault("Server.Processing", "MULTI_SUBSCRIBE adds or removes more than " +
                                         std::to_string(max) +
                                         " entries (messaging.max_filters_per_subscription)");
  }
}

std::string who_is(const principal* user) {
  return user ? "user " + quoted(user->name) : std::string("a caller without a login");
}

// The key a caller's FlexClients and subscriptions count against.
std::string quota_key(const caller& who) {
  return who.session.empty() ? "@" + std::string(who.address) : std::string(who.session);
}

void check_id(std::string_view id, std::size_t max, const char* what) {
  if (id.size() > max) {
    throw fault("Server.Processing", std::string("a ") + what + " longer than " +
                                         std::to_string(max) + " bytes (messaging.max_id_bytes)");
  }
}

fault over_quota(const char* key, std::size_t max, const char* what) {
  return fault("Server.Processing", "this caller (its session, or its address without one) holds " +
                                        std::string("messaging.") + key + " (" +
                                        std::to_string(max) + ") " + what);
}

}  // namespace

struct broker::destination {
  std::string name;
  config::destination_settings cfg;
  std::deque<std::shared_ptr<const stored>> log;
  std::uint64_t next_index = 0;  ///< the index the next message gets
  std::size_t bytes = 0;
  std::uint64_t published = 0, delivered = 0, dropped = 0;
  std::set<subscription*> subscribers;

  // What Producers sent, against throttle_inbound: a bucket of one second's messages each,
  // the destination's and each FlexClient's, under a mutex of its own.
  struct bucket {
    double tokens = 0;
    clock::time_point last;
  };
  std::mutex throttle_mutex;
  bucket inbound;
  by_id<bucket> inbound_by_client;
  clock::time_point swept;  ///< when FlexClients idle for a second last left the map
  std::atomic<std::uint64_t> throttled{0};

  // What Consumers receive, against throttle_outbound (under the broker's mutex).
  enum class outbound { buffer, conflate, ignore } policy = outbound::buffer;
  std::uint64_t passed = 0;
  std::uint64_t examined = 0;  ///< messages polls looked at to choose what to deliver
  std::uint64_t resumed = 0;
  std::uint64_t timed_out = 0;

  /// Who may subscribe to or send to which subtopic (publisher::authorize): set before the
  /// daemon starts, read only after.
  services::publisher::authorizer hook;

  std::uint64_t first_index() const { return log.empty() ? next_index : log.front()->index; }
};

broker::broker(config::messaging_settings settings) : cfg_(std::move(settings)) {
  for (const auto& [name, d] : cfg_.destinations) {
    auto dest = std::make_unique<destination>();
    dest->name = name;
    dest->cfg = d;
    dest->inbound = {static_cast<double>(d.throttle_inbound.max_frequency), clock::now()};
    const auto& policy = d.throttle_outbound.policy;
    dest->policy = policy == "conflate" ? destination::outbound::conflate
                   : policy == "ignore" ? destination::outbound::ignore
                                        : destination::outbound::buffer;
    destinations_.emplace(name, std::move(dest));
  }
}

broker::~broker() = default;

namespace {

// FlexClients a destination's throttle_inbound keeps count of at once: past it, a FlexClient
// it does not count yet is throttled (FlexClients idle for a second leave, once a second).
constexpr std::size_t max_counted_clients = 10'000;

// Refills `b` for the time since it was last used, at `rate` a second up to one second's
// worth: whether it holds a message's token. A rate of 0 is no bound.
template <class Bucket>
bool has_room(Bucket& b, std::uint32_t rate, clock::time_point now) {
  if (rate == 0) return true;
  const double since = std::chrono::duration<double>(now - b.last).count();
  b.tokens = std::min<double>(rate, b.tokens + since * rate);
  b.last = now;
  return b.tokens >= 1;
}

}  // namespace

const char* broker::throttled(destination& d, std::string_view client_id) {
  const auto& t = d.cfg.throttle_inbound;
  if (t.max_frequency == 0 && t.max_client_frequency == 0) return nullptr;
  const auto now = clock::now();
  const std::lock_guard lock(d.throttle_mutex);
  const char* why = nullptr;
  if (!has_room(d.inbound, t.max_frequency, now)) why = "to destination";
  destination::bucket* own = nullptr;
  if (!why && t.max_client_frequency != 0) {
    auto it = d.inbound_by_client.find(client_id);
    if (it == d.inbound_by_client.end()) {
      if (d.inbound_by_client.size() >= max_counted_clients && now - d.swept >= 1s) {
        std::erase_if(d.inbound_by_client,
                      [&](const auto& c) { return now - c.second.last >= 1s; });
        d.swept = now;
      }
      if (d.inbound_by_client.size() < max_counted_clients) {
        const auto full = static_cast<double>(t.max_client_frequency);
        it = d.inbound_by_client.emplace(std::string(client_id), destination::bucket{full, now})
                 .first;
      }
    }
    if (it == d.inbound_by_client.end()) {
      why = "by FlexClients at once to destination";
    } else if (own = &it->second; !has_room(*own, t.max_client_frequency, now)) {
      why = "by this FlexClient to destination";
    }
  }
  if (why) {
    ++d.throttled;
    return why;
  }
  if (t.max_frequency != 0) d.inbound.tokens -= 1;
  if (own) own->tokens -= 1;
  return nullptr;
}

broker::destination& broker::find(std::string_view name) {
  const auto it = destinations_.find(name);
  if (it == destinations_.end()) {
    throw fault("Server.Processing",
                "no destination " + quoted(name) + " is configured for messaging");
  }
  return *it->second;
}

void broker::check(const std::optional<config::access_rule>& rule, const principal* user,
                   std::string_view what, std::string_view where) const {
  if (!rule) return;
  if ((rule->authenticated || !rule->roles.empty()) && !user) {
    throw fault("Client.Authentication",
                "destination " + quoted(where) + " requires a login to " + std::string(what));
  }
  if (rule->roles.empty()) return;
  for (const auto& r : rule->roles) {
    if (user->has_role(r)) return;
  }
  throw fault("Client.Authorization", "user " + quoted(user->name) + " may not " +
                                          std::string(what) + " destination " + quoted(where));
}

namespace {

// What the headers of a message keep: names and strings in full, however often the request
// referenced one string.
std::size_t header_bytes(const amf::object_node& h) {
  std::size_t n = 0;
  for (const auto& [name, v] : h.dynamic) {
    n += name.size() + 16 + (v.kind() == amf::type::string ? v.as_string().size() : 0);
  }
  return n;
}

void check_headers(const amf::object_node& h, std::size_t max) {
  if (const std::size_t n = header_bytes(h); n > max) {
    throw fault("Server.Processing", "the message's headers hold " + std::to_string(n) +
                                         " bytes, over messaging.max_header_bytes (" +
                                         std::to_string(max) + ")");
  }
}

// The selector properties of a message: its headers.
void read_properties(broker::stored& m, const amf::value& headers) {
  if (const amf::object_node* h = headers.as_object()) {
    for (const auto& [name, v] : h->dynamic) m.properties[std::string(name)] = property(v);
    m.property_bytes = header_bytes(*h);
  }
}

void set_expiry(broker::stored& m) {
  // A client sends any double: NaN, infinity and lives past a century (1e16, 1e300) keep the
  // message for as long as retention does, and a time already past expires it now. Only
  // then is the rest converted: a double out of an integer's range would be undefined.
  constexpr double century_ms = 100.0 * 365 * 24 * 3600 * 1000;
  if (!(m.time_to_live > 0) || !(m.time_to_live < century_ms)) return;
  const double left = m.timestamp + m.time_to_live - amf::flex::now_ms();
  if (!(left < century_ms)) return;
  m.expires =
      clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(std::max(left, 0.0)));
}

// A message as a destination keeps it: the body and headers as AMF3, the headers a selector
// reads, the expiry.
std::shared_ptr<broker::stored> store(std::string_view destination, const amf::value& body,
                                      const amf::value& headers, double time_to_live) {
  auto m = std::make_shared<broker::stored>();
  m->destination = destination;
  amf::encode_amf3(body, m->body);
  if (const amf::object_node* h = headers.as_object(); h && !h->dynamic.empty()) {
    amf::encode_amf3(headers, m->headers);
    read_properties(*m, headers);
  }
  m->timestamp = amf::flex::now_ms();
  m->time_to_live = time_to_live;
  set_expiry(*m);
  return m;
}

fault unavailable(const store_unavailable& e) {
  return fault(
      "Server.Messaging.Unavailable",
      std::string("messaging is shared through a store that cannot be reached: ") + e.what());
}

}  // namespace

void broker::publish(std::string_view destination_name, const amf::value& body,
                     std::string_view subtopic, const std::vector<header>& headers) {
  destination& d = find(destination_name);
  if (!subtopic.empty()) check_subtopic(d.cfg, subtopic, true);
  amf::document doc;
  amf::object_node* h = doc.object();
  for (const auto& [name, v] : headers) h->dynamic.push_back({doc.copy(name), v});
  if (!subtopic.empty()) h->dynamic.push_back({"DSSubtopic", doc.string(subtopic)});
  check_headers(*h, cfg_.max_header_bytes);
  auto m = store(d.name, body, amf::value::of(h),
                 d.cfg.message_ttl ? static_cast<double>(d.cfg.message_ttl->count()) : 0.0);
  m->message_id = amf::flex::new_uuid();
  m->subtopic = subtopic;
  if (share_) return share_->post(std::move(m));  // comes back through `mirror`
  append_and_wake(d, std::move(m));
}

boost::asio::awaitable<void> broker::send(const amf::flex::message& in, const principal* user) {
  destination& d = find(in.destination);
  check(d.cfg.send, user, "send to", d.name);
  const amf::value dsid = in.header("DSId");
  const std::string_view sender = dsid.kind() == amf::type::string ? dsid.as_string() : "";
  if (d.cfg.throttle_inbound.max_client_frequency != 0) {
    check_id(sender, cfg_.max_id_bytes, "DSId");  // a key kept for a second
  }
  if (const char* why = throttled(d, sender)) {
    if (d.cfg.throttle_inbound.policy == "ignore") co_return;  // acknowledged, not kept
    // BlazeDS's words (ThrottleManager), and the key that set the bound.
    throw fault("Server.Processing",
                "Message " + quoted(in.message_id) + " throttled: too many messages sent " + why +
                    " " + quoted(d.name) + " in too small of a time interval (throttle_inbound)");
  }
  amf::document doc;
  amf::object_node* h = doc.object();
  std::string subtopic;
  if (const amf::object_node* from = in.headers.as_object()) {
    for (const auto& [name, v] : from->dynamic) {
      if (private_header(name)) continue;
      if (name == "DSSubtopic") {
        if (v.kind() != amf::type::string) {
          // MultiTopicProducer's array of subtopics: not supported here, said so.
          throw fault("Server.Processing",
                      "DSSubtopic must be one subtopic (a string); arrays are not supported");
        }
        subtopic = v.as_string();
        if (subtopic.empty()) continue;
        check_subtopic(d.cfg, subtopic, true);
      }
      h->dynamic.push_back({name, v});
    }
  }
  if (d.hook) {
    const services::access_request asked{services::access_request::operation::send, d.name,
                                         subtopic, user};
    co_await admit(d, asked);
  }
  check_headers(*h, cfg_.max_header_bytes);
  const double ttl = d.cfg.message_ttl ? static_cast<double>(d.cfg.message_ttl->count())
                                       : std::max(0.0, in.time_to_live);
  auto m = store(d.name, in.body, amf::value::of(h), ttl);
  m->message_id = in.message_id.empty() ? amf::flex::new_uuid() : std::string(in.message_id);
  if (in.timestamp > 0) m->timestamp = in.timestamp;
  m->subtopic = subtopic;
  if (share_) {
    try {
      co_await share_->append(std::move(m));  // comes back through `mirror`
    } catch (const store_unavailable& e) {
      throw unavailable(e);
    }
  } else {
    append_and_wake(d, std::move(m));
  }
  if (forwarder_ && !d.cfg.forward.empty()) forwarder_->forward(d.cfg.forward, in, subtopic, user);
}

void broker::authorize(std::string_view destination_name, authorizer hook) {
  find(destination_name).hook = std::move(hook);
}

boost::asio::awaitable<void> broker::admit(destination& d, services::access_request a) {
  if (!d.hook) co_return;
  auto asked = d.hook(a);
  if (co_await std::move(asked)) co_return;
  const bool subscribing = a.op == services::access_request::operation::subscribe;
  const std::string where =
      a.subtopic.empty() ? "destination " + quoted(d.name)
                         : "subtopic " + quoted(a.subtopic) + " of destination " + quoted(d.name);
  // BlazeDS's codes: "Your subscribe request to the subtopic ... was denied", "Your sent
  // message to the subtopic ... was blocked".
  throw fault("Client.Authorization",
              who_is(a.user) + (subscribing ? " may not subscribe to " : " may not send to ") +
                  where + (subscribing ? " (10557)" : " (10558)"));
}

boost::asio::awaitable<void> broker::admit_subscribe(std::string_view destination_name,
                                                     std::span<const std::string_view> subtopics,
                                                     const principal* user) {
  if (subtopics.empty()) co_return;
  destination& d = find(destination_name);
  check(d.cfg.subscribe, user, "subscribe to", d.name);
  for (auto it = subtopics.begin(); it != subtopics.end(); ++it) {
    const std::string_view subtopic = *it;
    // Entries that differ in their selector only ask once (at most
    // max_filters_per_subscription questions a request, for a hook that may be a call).
    if (std::find(subtopics.begin(), it, subtopic) != it) continue;
    if (!subtopic.empty()) check_subtopic(d.cfg, subtopic, false);
    const services::access_request asked{services::access_request::operation::subscribe, d.name,
                                         subtopic, user};
    co_await admit(d, asked);
  }
}

std::vector<std::string_view> broker::entry_subtopics(
    std::span<const std::string_view> entries) const {
  check_entry_count(entries.size(), 0, cfg_.max_filters_per_subscription);
  std::vector<std::string_view> out;
  for (const auto e : entries) {
    if (const auto parsed = bounded_entry(e)) out.push_back(parsed->subtopic);
  }
  return out;
}

std::shared_ptr<broker::stored> broker::restore(std::string destination, std::uint64_t index,
                                                std::string message_id, std::string subtopic,
                                                std::string body, std::string headers,
                                                double timestamp, double time_to_live) {
  auto m = std::make_shared<stored>();
  m->destination = std::move(destination);
  m->index = index;
  m->message_id = std::move(message_id);
  m->subtopic = std::move(subtopic);
  m->body = std::move(body);
  m->headers = std::move(headers);
  if (!m->headers.empty()) {
    amf::document doc;
    read_properties(*m, amf::decode_amf3(amf::as_bytes(m->headers), doc));
  }
  m->timestamp = timestamp;
  m->time_to_live = time_to_live;
  set_expiry(*m);
  return m;
}

void broker::mirror(std::shared_ptr<stored> m) {
  const auto it = destinations_.find(m->destination);
  if (it == destinations_.end()) return;  // a destination configured elsewhere only
  destination& d = *it->second;
  std::unique_lock lock(mutex_);
  if (m->index < d.next_index) return;  // had it
  d.next_index = m->index;              // past what retention trimmed before it was read
  woken waiters = append(d, std::move(m));
  lock.unlock();
  wake_all(std::move(waiters));
}

void broker::changed(std::string_view client_id) {
  const std::lock_guard lock(mutex_);
  const auto c = clients_.find(client_id);
  if (c == clients_.end()) return;
  if (c->second.parked) wake_up(c->second.parked, wake::message);
  if (c->second.stream) wake_up(c->second.stream, wake::message);
}

void broker::share(shared_store* share) {
  share_ = share;
}

void broker::append_and_wake(destination& d, std::shared_ptr<stored> m) {
  std::unique_lock lock(mutex_);
  woken waiters = append(d, std::move(m));
  lock.unlock();
  wake_all(std::move(waiters));
}

broker::woken broker::append(destination& d, std::shared_ptr<stored> m) {
  m->index = d.next_index++;
  m->order = ++order_;
  d.bytes += m->bytes();
  ++d.published;
  const std::shared_ptr<const stored> kept = std::move(m);
  d.log.push_back(kept);
  // Past the retention bound the oldest go; the newest stays whatever its size.
  while (d.log.size() > d.cfg.max_messages || (d.bytes > d.cfg.max_bytes && d.log.size() > 1)) {
    const auto& oldest = d.log.front();
    for (const subscription* s : d.subscribers) {
      if (s->cursor <= oldest->index) {
        ++d.dropped;  // somebody had not read it
        break;
      }
    }
    d.bytes -= oldest->bytes();
    d.log.pop_front();
  }
  woken out;
  out.reserve(d.subscribers.size());  // (one allocation, however many it wakes)
  const auto now = clock::now();
  const bool expired = kept->expires < now;  // (a poll passes it; none is handed it)
  for (subscription* s : d.subscribers) {
    const bool selected = selects(*s, *kept);
    if ((expired || !hand_over(*s, kept, selected, now)) && selected && s->owner->stream) {
      s->owner->stream->poll_needed = true;
    }
    if (!selected) continue;
    if (s->owner->parked) out.push_back(s->owner->parked);
    if (s->owner->stream) out.push_back(s->owner->stream);
  }
  return out;
}

bool broker::hand_over(subscription& s, const std::shared_ptr<const stored>& m, bool selected,
                       clock::time_point now) {
  const client& c = *s.owner;
  if (share_ || !c.stream || s.cursor != m->index) return false;
  // Only while the client has read all there was, in every subscription: so the stream
  // writes its messages in the order they were published.
  const bool caught_up = std::all_of(c.subscriptions.begin(), c.subscriptions.end(), [&](auto* t) {
    return t->lost == 0 && t->cursor >= (t->dest == s.dest ? m->index : t->dest->next_index);
  });
  if (!caught_up) return false;
  const bool bounded = rate_of(s) != 0;
  if (bounded) refill(s, now);
  if (selected && bounded && s.outbound.tokens < 1) {
    // Past its frequency: a poll reads it when it is due, or, under "ignore", passes it.
    if (s.dest->policy != destination::outbound::ignore) return false;
    ++s.dest->passed;
    selected = false;
  }
  if (!selected) {  // a poll would pass it
    s.cursor = m->index + 1;
    return true;
  }
  waiter& w = *c.stream;
  const std::lock_guard lock(w.handed_mutex);
  // Within what a poll reads at once: past it, or too large for a piece, a poll reads it.
  if (w.queue.size() >= cfg_.max_messages_per_poll || m->bytes() > w.max_bytes - w.queue_bytes) {
    return false;
  }
  w.queue.push_back({s.shared_id, m, s.reads});
  w.queue_bytes += m->bytes();
  s.cursor = m->index + 1;
  delivered_to(s, 1, now);
  ++s.dest->delivered;
  return true;
}

void broker::delivered_to(subscription& s, std::uint64_t n, clock::time_point now) {
  s.used = now;
  if (rate_of(s) != 0) s.outbound.tokens -= static_cast<double>(n);
}

void broker::take(waiter& w, std::vector<waiter::handed>& into) {
  into.clear();
  const std::lock_guard lock(w.handed_mutex);
  std::swap(w.queue, into);
  w.queue_bytes = 0;
}

std::vector<broker::moved> broker::unwritten(const std::vector<waiter::handed>& handed) {
  std::vector<moved> out;
  for (const auto& h : handed) {
    const std::uint64_t at = h.message->index;
    out.push_back({h.subscription, at, at + 1, 1, h.reads});
  }
  return out;
}

bool broker::selects(const subscription& s, const stored& m) {
  const auto& separator = s.dest->cfg.subtopic_separator;
  return std::any_of(s.filters.begin(), s.filters.end(), [&](const filter& f) {
    // With no subtopic, a subscription receives only messages without one, and the reverse.
    if (f.subtopic.empty() != m.subtopic.empty()) return false;
    if (!f.subtopic.empty() && !subtopic_matches(f.subtopic, m.subtopic, separator)) return false;
    return f.sel.matches(m.properties);
  });
}

broker::held_by_caller& broker::quota_of(const std::string& key) {
  return per_caller_[key];
}

void broker::release_quota(const std::string& key, std::size_t clients, std::size_t subscriptions) {
  const auto it = per_caller_.find(key);
  if (it == per_caller_.end()) return;
  it->second.clients -= std::min(clients, it->second.clients);
  it->second.subscriptions -= std::min(subscriptions, it->second.subscriptions);
  if (it->second.clients == 0 && it->second.subscriptions == 0) per_caller_.erase(it);
}

broker::client* broker::find_client(std::string_view id, const caller& who) {
  const auto it = clients_.find(id);
  if (it == clients_.end()) return nullptr;
  client& c = it->second;
  if (!c.owner.empty() && c.owner != who.session) {
    throw fault("Client.Authorization",
                "this FlexClient (DSId) belongs to another session: connect anew (a ping)");
  }
  if (c.owner.empty() && !who.session.empty()) bind(c, who.session);  // first used with one
  c.seen = clock::now();
  return &c;
}

void broker::bind(client& c, std::string_view session) {
  release_quota(c.quota, 1, c.subscriptions.size());
  c.owner = session;
  c.quota = c.owner;
  held_by_caller& q = quota_of(c.quota);
  ++q.clients;
  q.subscriptions += c.subscriptions.size();
}

broker::client& broker::add_client(std::string_view id, std::string_view owner, std::string quota) {
  ++quota_of(quota).clients;
  client& c = clients_.emplace(std::string(id), client{}).first->second;
  c.owner = owner;
  c.quota = std::move(quota);
  c.seen = clock::now();
  return c;
}

broker::client& broker::claim(std::string_view id, const caller& who) {
  check_id(id, cfg_.max_id_bytes, "DSId");
  if (client* c = find_client(id, who)) return *c;
  std::string key = quota_key(who);
  if (const auto max = cfg_.max_clients_per_caller; max != 0) {
    const auto q = per_caller_.find(key);
    if (q != per_caller_.end() && q->second.clients >= max) {
      throw over_quota("max_clients_per_caller", max, "FlexClients");
    }
  }
  return add_client(id, who.session, std::move(key));
}

void broker::erase_client(std::string_view id, bool keep) {
  const auto it = clients_.find(id);
  if (it == clients_.end()) return;
  for (const subscription* s : std::vector(it->second.subscriptions)) {
    remove_subscription(s->id, keep);
  }
  release_quota(it->second.quota, 1, 0);
  clients_.erase(it);
}

void broker::sweep() {
  const auto now = clock::now();
  if (now < next_sweep_) return;
  // Often enough that what times out goes within a quarter of its time past it.
  clock::duration every = 10s;
  const auto within = [&](std::chrono::milliseconds t) {
    if (t.count() != 0) every = std::min<clock::duration>(every, t / 4);
  };
  within(cfg_.client_idle_timeout);
  within(cfg_.resume_window);
  for (const auto& [name, d] : destinations_) within(d->cfg.subscription_timeout);
  next_sweep_ = now + every;
  std::erase_if(resumable_, [&](const auto& r) { return r.second.until <= now; });
  std::erase_if(to_tell_, [&](const auto& t) {
    if (t.second.until > now) return false;
    telling_ -= t.second.subscriptions.size();
    return true;
  });
  // (With a shared store the subscriptions live in it, and end with their FlexClient's idle
  // timeout there.)
  for (const auto& [name, d] : destinations_) {
    if (d->cfg.subscription_timeout.count() != 0 && !share_) time_out(*d, now);
  }
  if (cfg_.client_idle_timeout.count() == 0) return;
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->second.parked || it->second.stream ||
        now - it->second.seen < cfg_.client_idle_timeout) {
      ++it;
      continue;
    }
    // Told, unless they are kept: then its next poll gets NotSubscribed, and the SDK's
    // resubscribe resumes them (or, shared, reads them from the store again).
    if (cfg_.resume_window.count() == 0 && !share_) {
      for (const subscription* s : it->second.subscriptions) tell_ended(*s);
    }
    const std::string id = (it++)->first;
    erase_client(id, true);  // timed out: its subscriptions may be resumed
  }
}

void broker::time_out(destination& d, clock::time_point now) {
  std::vector<std::string> idle;
  for (const subscription* s : d.subscribers) {
    if (now - s->used >= d.cfg.subscription_timeout) idle.push_back(s->id);
  }
  for (const auto& id : idle) {
    const subscription& s = subscriptions_.find(id)->second;
    const std::string client_id = s.client;
    tell_ended(s);
    ++d.timed_out;
    remove_subscription(id, true);  // (kept for resume_window, if it is set)
    forget_if_unused(client_id);
  }
}

void broker::tell_ended(const subscription& s) {
  // Bounded as the subscriptions were; past it, the client's next poll finds them gone.
  if (telling_ >= cfg_.max_subscriptions) return;
  auto& t = to_tell_[s.client];
  t.owner = s.owner->owner;
  t.subscriptions.push_back({s.id, s.dest->name});
  // Kept until the FlexClient polls, or as long as it would have been kept itself.
  const auto timeout = cfg_.client_idle_timeout.count() != 0 ? cfg_.client_idle_timeout
                                                             : std::chrono::milliseconds(10min);
  t.until = clock::now() + timeout;
  ++telling_;
  client& c = *s.owner;
  if (c.parked) wake_up(c.parked, wake::message);
  if (c.stream) {
    c.stream->poll_needed = true;
    wake_up(c.stream, wake::message);
  }
}

void broker::take_ended(std::string_view client_id, const caller& who, batch& out) {
  if (to_tell_.empty()) return;
  const auto it = to_tell_.find(client_id);
  if (it == to_tell_.end()) return;
  if (!it->second.owner.empty() && it->second.owner != who.session) return;  // not for this caller
  telling_ -= it->second.subscriptions.size();
  out.invalidated = std::move(it->second.subscriptions);
  to_tell_.erase(it);
}

boost::asio::awaitable<void> broker::sweeper() {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  for (;;) {
    {
      const std::lock_guard lock(mutex_);
      if (draining_) co_return;
      sweep();
      timer.expires_at(next_sweep_);
    }
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

std::uint32_t broker::consumer_frequency(const amf::value& header) {
  switch (header.kind()) {
    case amf::type::undefined:
    case amf::type::null:
      return 0;
    case amf::type::integer:
    case amf::type::number: {
      const double v = header.to_double();
      char text[32];
      const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
      return frequency(v, std::string_view(text, ec == std::errc() ? end - text : 0));
    }
    default:
      throw bad_frequency("(not a number)");
  }
}

void broker::set_frequency(subscription& s, std::uint32_t max_frequency) {
  if (s.asked == max_frequency && s.outbound.last != clock::time_point()) return;  // a repeat
  s.asked = max_frequency;
  s.outbound = {static_cast<double>(rate_of(s)), clock::now()};  // a second's worth to start
}

std::uint32_t broker::rate_of(const subscription& s) {
  return tighter(s.asked, s.dest->cfg.throttle_outbound.max_client_frequency);
}

std::uint32_t broker::refill(subscription& s, clock::time_point now) {
  const std::uint32_t rate = rate_of(s);
  has_room(s.outbound, rate, now);
  return rate;
}

void broker::subscribe(std::string_view client_id, std::string_view subscription_id,
                       std::string_view destination_name, std::string_view subtopic,
                       std::string_view selector_text, std::uint32_t max_frequency,
                       const principal* user, const caller& who) {
  destination& d = find(destination_name);
  check(d.cfg.subscribe, user, "subscribe to", d.name);
  if (!subtopic.empty()) check_subtopic(d.cfg, subtopic, false);
  parse_selector(selector_text);
  const std::lock_guard lock(mutex_);
  sweep();
  set_frequency(add_filter(client_id, subscription_id, d, subtopic, selector_text, who),
                max_frequency);
}

broker::subscription& broker::add_filter(std::string_view client_id,
                                         std::string_view subscription_id, destination& d,
                                         std::string_view subtopic, std::string_view selector_text,
                                         const caller& who) {
  check_id(subscription_id, cfg_.max_id_bytes, "clientId");
  client& c = claim(client_id, who);
  try {
    auto it = subscriptions_.find(subscription_id);
    if (it == subscriptions_.end()) {
      if (subscriptions_.size() >= cfg_.max_subscriptions) {
        throw fault("Server.Busy", "the daemon holds messaging.max_subscriptions (" +
                                       std::to_string(cfg_.max_subscriptions) + ") subscriptions");
      }
      if (c.subscriptions.size() >= cfg_.max_subscriptions_per_client) {
        throw fault("Server.Processing",
                    "this client holds messaging.max_subscriptions_per_client (" +
                        std::to_string(cfg_.max_subscriptions_per_client) + ") subscriptions");
      }
      const auto max = cfg_.max_subscriptions_per_caller;
      if (max != 0 && quota_of(c.quota).subscriptions >= max) {
        throw over_quota("max_subscriptions_per_caller", max, "subscriptions");
      }
      resumable* r = resumable_for(subscription_id, client_id, d, who);
      subscription& made = new_subscription(c, client_id, subscription_id, d);
      if (r) {
        made.cursor = r->cursor;  // where it stopped: what came since is read next
        made.lost = r->lost;      // and what it was not told of yet
        made.filters = std::move(r->filters);
        made.asked = r->asked;
        ++d.resumed;
        resumable_.erase(resumable_.find(subscription_id));
      }
      it = subscriptions_.find(made.id);
    }
    subscription& s = it->second;
    if (s.client != client_id) {
      throw fault("Server.Processing", "the clientId " + quoted(subscription_id) +
                                           " is in use by another FlexClient (10559)");
    }
    s.used = clock::now();  // subscribed again: its subscription_timeout starts anew
    if (s.dest != &d) {
      throw fault("Server.Processing", "the clientId " + quoted(subscription_id) +
                                           " subscribes to destination " + quoted(s.dest->name));
    }
    for (const auto& f : s.filters) {
      if (f.subtopic == subtopic && f.sel.text() == selector_text) return s;  // a repeat
    }
    if (s.filters.size() >= cfg_.max_filters_per_subscription) {
      throw fault("Server.Processing",
                  "the subscription has messaging.max_filters_per_subscription (" +
                      std::to_string(cfg_.max_filters_per_subscription) +
                      ") subtopic and selector pairs");
    }
    s.filters.push_back({std::string(subtopic), selector(selector_text)});
    return s;
  } catch (...) {
    forget_if_unused(client_id);  // a refused subscribe leaves nothing behind
    throw;
  }
}

broker::resumable* broker::resumable_for(std::string_view id, std::string_view client_id,
                                         const destination& d, const caller& who) {
  const auto r = resumable_.find(id);
  if (r == resumable_.end()) return nullptr;
  // Only by its own FlexClient (an id the daemon made at random and gave that client alone),
  // and, bound to a session, within it.
  if (r->second.client != client_id ||
      (!r->second.owner.empty() && r->second.owner != who.session)) {
    throw fault("Server.Processing", "the clientId " + quoted(id) +
                                         " is in use by another FlexClient (10559): a "
                                         "subscription kept for it to resume");
  }
  if (r->second.dest != &d) {
    throw fault("Server.Processing", "the clientId " + quoted(id) + " subscribes to destination " +
                                         quoted(r->second.dest->name));
  }
  return &r->second;
}

broker::subscription& broker::new_subscription(client& c, std::string_view client_id,
                                               std::string_view subscription_id, destination& d) {
  subscription s;
  s.id = subscription_id;
  s.client = client_id;
  s.dest = &d;
  s.owner = &c;
  s.cursor = d.next_index;  // from now on: what was published before is not for it
  s.used = clock::now();
  s.shared_id = std::make_shared<const std::string>(s.id);
  auto& kept = subscriptions_.emplace(s.id, std::move(s)).first->second;
  c.subscriptions.push_back(&kept);
  ++quota_of(c.quota).subscriptions;
  d.subscribers.insert(&kept);
  return kept;
}

void broker::unsubscribe(std::string_view client_id, std::string_view subscription_id,
                         std::string_view subtopic, std::string_view selector_text,
                         const caller& who, bool preserve) {
  const std::lock_guard lock(mutex_);
  const auto it = subscriptions_.find(subscription_id);
  if (it == subscriptions_.end()) return;  // gone already (a timeout, a restart): done
  subscription& s = it->second;
  if (s.client != client_id) throw not_subscribed("not subscribed as " + quoted(subscription_id));
  find_client(client_id, who);
  const auto before = s.filters.size();
  std::erase_if(s.filters, [&](const filter& f) {
    return f.subtopic == subtopic && f.sel.text() == selector_text;
  });
  // An unsubscribe that names no filter of it ends the whole subscription.
  if (s.filters.empty() ||
      (before == s.filters.size() && subtopic.empty() && selector_text.empty())) {
    remove_subscription(s.id, preserve);
    forget_if_unused(client_id);
  }
}

void broker::multi_subscribe(std::string_view client_id, std::string_view subscription_id,
                             std::string_view destination_name,
                             std::span<const std::string_view> add,
                             std::span<const std::string_view> remove, std::uint32_t max_frequency,
                             const principal* user, const caller& who) {
  destination& d = find(destination_name);
  // Bounded before anything is parsed or copied: each entry is read once.
  check_entry_count(add.size(), remove.size(), cfg_.max_filters_per_subscription);
  std::vector<multi_entry> adding;
  if (!add.empty()) check(d.cfg.subscribe, user, "subscribe to", d.name);
  for (const auto a : add) {
    auto e = bounded_entry(a);
    if (!e) continue;
    if (!e->subtopic.empty()) check_subtopic(d.cfg, e->subtopic, false);
    parse_selector(e->selector);
    adding.push_back(*e);
    max_frequency = tighter(max_frequency, e->max_frequency);
  }
  const std::lock_guard lock(mutex_);
  sweep();
  subscription* added = nullptr;
  for (const auto& e : adding) {
    added = &add_filter(client_id, subscription_id, d, e.subtopic, e.selector, who);
  }
  if (added) set_frequency(*added, max_frequency);
  const auto it = subscriptions_.find(subscription_id);
  if (it == subscriptions_.end()) return;
  if (it->second.client != client_id) {
    throw not_subscribed("not subscribed as " + quoted(subscription_id));
  }
  find_client(client_id, who);
  for (const auto& r : remove) {
    const auto e = entry(r);
    if (!e) continue;
    std::erase_if(it->second.filters, [&](const filter& f) {
      return f.subtopic == e->subtopic && f.sel.text() == e->selector;
    });
  }
  if (it->second.filters.empty()) {
    remove_subscription(it->second.id);
    forget_if_unused(client_id);
  }
}

void broker::remove_subscription(const std::string& id_ref, bool keep) {
  const std::string id = id_ref;  // `id_ref` may live in what is erased
  const auto it = subscriptions_.find(id);
  if (it == subscriptions_.end()) return;
  subscription& s = it->second;
  // (Not with a shared store: there the subscriptions live in it until their client's idle
  // timeout, and any instance continues them.)
  if (keep && !share_ && cfg_.resume_window.count() != 0 &&
      resumable_.size() < cfg_.max_subscriptions) {
    resumable_.insert_or_assign(
        id, resumable{s.client, s.owner->owner, s.dest, std::move(s.filters), s.cursor, s.lost,
                      s.asked, clock::now() + cfg_.resume_window});
  }
  std::erase(it->second.owner->subscriptions, &it->second);
  release_quota(it->second.owner->quota, 0, 1);
  it->second.dest->subscribers.erase(&it->second);
  subscriptions_.erase(it);
}

void broker::forget_if_unused(std::string_view client_id) {
  // A FlexClient is kept for its subscriptions and what it holds open, not for having been
  // seen: stream opens and subscribe/unsubscribe rounds with made-up DSIds leave nothing.
  const auto c = clients_.find(client_id);
  if (c != clients_.end() && c->second.subscriptions.empty() && !c->second.parked &&
      !c->second.stream) {
    erase_client(client_id);
  }
}

void broker::disconnect(std::string_view client_id, const caller& who) {
  const std::lock_guard lock(mutex_);
  if (find_client(client_id, who)) end_locked(client_id, true);
}

void broker::end(std::string_view client_id) {
  const std::lock_guard lock(mutex_);
  end_locked(client_id, false);
}

void broker::end_locked(std::string_view client_id, bool keep) {
  const auto it = clients_.find(client_id);
  if (it == clients_.end()) return;
  for (const auto& w : {it->second.parked, it->second.stream}) {
    if (!w) continue;
    wake_up(w, wake::replaced);
    release(*w, it->second);
  }
  erase_client(client_id, keep);
}

std::string broker::owner(std::string_view client_id) const {
  const std::lock_guard lock(mutex_);
  const auto it = clients_.find(client_id);
  return it == clients_.end() ? std::string() : it->second.owner;
}

bool broker::owned_by(std::string_view client_id, std::string_view session) const {
  const std::lock_guard lock(mutex_);
  const auto it = clients_.find(client_id);
  return it == clients_.end() || it->second.owner.empty() || it->second.owner == session;
}

void broker::rebind(std::string_view client_id, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  const std::lock_guard lock(mutex_);
  // What it is to be told follows too, whether or not the FlexClient is still kept.
  if (const auto t = to_tell_.find(client_id); t != to_tell_.end() && t->second.owner == from) {
    t->second.owner = to;
  }
  const auto it = clients_.find(client_id);
  if (it == clients_.end() || it->second.owner != from) return;
  bind(it->second, to);
}

broker::batch broker::poll(std::string_view client_id, std::string_view subscription_id,
                           const caller& who, std::size_t max_bytes) {
  const std::lock_guard lock(mutex_);
  sweep();
  batch out;
  take_ended(client_id, who, out);
  const client* c = find_client(client_id, who);
  if (!c || c->subscriptions.empty()) {
    if (!out.invalidated.empty()) return out;  // what it is told is all there is
    throw not_subscribed("this client has no subscriptions (a restart ended them?): subscribe");
  }
  // The client's subscriptions as they are (nothing below changes them), or the one named.
  const std::vector<subscription*>& all = c->subscriptions;
  std::span<subscription* const> read_from = all;
  if (!subscription_id.empty()) {
    const auto named = std::find_if(
        all.begin(), all.end(), [&](const subscription* s) { return s->id == subscription_id; });
    if (named == all.end()) throw not_subscribed("not subscribed as " + quoted(subscription_id));
    read_from = {&*named, 1};
  }
  const std::size_t max = cfg_.max_messages_per_poll;
  const auto now = clock::now();
  struct read_to {
    subscription* s;
    std::uint64_t from, end;  ///< where it started, and past what it examined
  };
  boost::container::small_vector<read_to, 4> read;  // a client has one or a few: no allocation
  std::vector<std::pair<subscription*, std::uint64_t>> oversized;  // (allocates only if used)
  for (subscription* const subscribed : read_from) {
    subscription& s = *subscribed;
    destination& d = *s.dest;
    const std::uint64_t first = d.first_index();
    if (s.cursor < first) {
      out.lost[s.id] = first - s.cursor;
      s.cursor = first;
    }
    if (s.lost != 0) out.lost[s.id] += std::exchange(s.lost, 0);  // replies not written
    if (s.cursor >= d.next_index) {  // read to the end (or, shared, ahead of this mirror)
      read.push_back({&s, s.cursor, s.cursor});
      continue;
    }
    read.push_back({&s, s.cursor, read_subscription(s, out, max_bytes, now, oversized)});
  }
  // In the order they were published; past the per-poll bound the rest waits, each
  // subscription's cursor stopping at its first message left out.
  // (One subscription's are in order already: std::stable_sort would still allocate.)
  if (read_from.size() > 1) {
    std::stable_sort(
        out.messages.begin(), out.messages.end(),
        [](const delivery& a, const delivery& b) { return a.message->order < b.message->order; });
  }
  // Past the count, or the bytes a reply may carry, the rest waits.
  std::size_t keep = 0;
  for (std::size_t bytes = 0; keep < out.messages.size() && keep < max; ++keep) {
    bytes += out.messages[keep].message->bytes();
    if (bytes > max_bytes) break;
  }
  // (Keyed by views of the deliveries left out: they go only once the cursors are set.)
  std::map<std::string_view, std::uint64_t> left_out;
  for (std::size_t i = keep; i < out.messages.size(); ++i) {
    left_out.emplace(*out.messages[i].subscription, out.messages[i].message->index);
  }
  const auto kept = out.messages.begin() + static_cast<std::ptrdiff_t>(keep);
  for (const auto& r : read) {
    const auto l = left_out.find(r.s->id);
    r.s->cursor = l == left_out.end() ? r.end : l->second;
    if (r.s->cursor != r.from) ++r.s->reads;
    const auto delivered = static_cast<std::uint64_t>(
        std::count_if(out.messages.begin(), kept,
                      [&](const delivery& m) { return m.subscription == r.s->shared_id; }));
    if (delivered != 0) {
      out.cursors.push_back({r.s->shared_id, r.from, r.s->cursor, delivered, r.s->reads});
      delivered_to(*r.s, delivered, now);
    }
  }
  out.messages.erase(kept, out.messages.end());
  for (const auto& [s, index] : oversized) {
    if (index < s->cursor) ++out.lost[s->id];
  }
  for (const auto& m : out.messages)
    ++destinations_.find(m.message->destination)->second->delivered;
  return out;
}

std::uint64_t broker::read_subscription(
    subscription& s, batch& out, std::size_t max_bytes, clock::time_point now,
    std::vector<std::pair<subscription*, std::uint64_t>>& oversized) {
  destination& d = *s.dest;
  const std::size_t max = cfg_.max_messages_per_poll;
  // Past its frequency the rest waits (or is passed); without one, past the per-poll bound.
  const std::uint32_t rate = refill(s, now);
  const std::size_t may = rate == 0 ? max : static_cast<std::size_t>(s.outbound.tokens);
  const auto from = d.log.begin() + static_cast<std::ptrdiff_t>(s.cursor - d.first_index());
  // Under "conflate", the newest message of each subtopic of those that wait: the others
  // are passed.
  conflation* const c = d.policy == destination::outbound::conflate ? &conflated(s, now) : nullptr;
  std::size_t taken = 0;
  std::uint64_t end = s.cursor;  // past what it examined
  for (auto m = from; m != d.log.end() && taken < max; ++m) {
    const stored& message = **m;
    ++d.examined;
    const auto n = c ? c->newest.find(message.subtopic) : decltype(c->newest)::iterator{};
    const bool has_newest = c && n != c->newest.end();
    if (message.expires >= now && selects(s, message)) {
      if (has_newest && n->second != message.index) {
        ++d.passed;  // a newer one of its subtopic waits
      } else if (taken >= may && d.policy != destination::outbound::ignore) {
        // Held back until its next token: (tokens - taken) is what is left of one.
        const double wait = (1 - (s.outbound.tokens - static_cast<double>(taken))) / rate;
        out.due = std::min(out.due, now + std::chrono::duration_cast<clock::duration>(
                                              std::chrono::duration<double>(wait)));
        break;
      } else if (taken >= may) {
        ++d.passed;
      } else if (message.bytes() > max_bytes) {  // no reply may carry it: lost, once passed
        oversized.emplace_back(&s, message.index);
      } else {
        out.messages.push_back({s.shared_id, *m});
        ++taken;
      }
    }
    if (has_newest && n->second == message.index) c->newest.erase(n);  // read past it
    end = message.index + 1;
  }
  if (c) c->at = end;
  return end;
}

broker::conflation& broker::conflated(subscription& s, clock::time_point now) {
  if (!s.conflated) s.conflated = std::make_unique<conflation>();
  conflation& c = *s.conflated;
  if (c.at != s.cursor || c.scanned < s.cursor) {
    c.newest.clear();
    c.scanned = s.cursor;
  }
  // What came since the last poll is added to what that poll found.
  destination& d = *s.dest;
  for (auto m = d.log.begin() + static_cast<std::ptrdiff_t>(c.scanned - d.first_index());
       m != d.log.end(); ++m) {
    ++d.examined;
    if ((*m)->expires < now || !selects(s, **m)) continue;
    // The key views the newest's own subtopic: an older message may leave the log first.
    const std::string_view subtopic = (*m)->subtopic;
    if (auto n = c.newest.find(subtopic); n == c.newest.end()) {
      c.newest.emplace(subtopic, (*m)->index);
    } else {
      auto entry = c.newest.extract(n);
      entry.key() = subtopic;
      entry.mapped() = (*m)->index;
      c.newest.insert(std::move(entry));
    }
  }
  c.scanned = d.next_index;
  return c;
}

boost::asio::awaitable<broker::batch> broker::async_poll(std::string_view client_id,
                                                         std::string_view subscription_id,
                                                         caller who, std::size_t max_bytes) {
  if (!share_) co_return poll(client_id, subscription_id, who, max_bytes);
  co_await load(client_id, who);
  batch b = poll(client_id, subscription_id, who, max_bytes);
  if (b.messages.empty() && b.lost.empty()) co_return b;
  std::vector<std::pair<std::string, std::uint64_t>> cursors;
  for (auto& s : shared_state(client_id)) cursors.emplace_back(std::move(s.id), s.cursor);
  std::string id(client_id);
  try {
    co_await share_->advance(std::move(id), std::move(cursors));
  } catch (const store_unavailable& e) {
    throw unavailable(e);  // not delivered: read again by the next poll
  }
  co_return b;
}

void broker::rewind_locked(std::string_view client_id, const std::vector<moved>& cursors) {
  for (const auto& c : cursors) {
    const auto it = subscriptions_.find(*c.subscription);
    if (it == subscriptions_.end() || it->second.client != client_id) continue;
    subscription& s = it->second;
    // Unless a poll read on since (a message handed over to a stream moves the cursor too).
    if (s.cursor == c.to || s.reads == c.reads) {
      s.cursor = std::min(s.cursor, c.from);
    } else {
      s.lost += c.delivered;  // told next time
    }
  }
}

boost::asio::awaitable<void> broker::rewind(std::string client_id, std::vector<moved> cursors) {
  {
    const std::lock_guard lock(mutex_);
    rewind_locked(client_id, cursors);
  }
  if (!share_) co_return;
  try {
    co_await share_->rewind(std::move(client_id), std::move(cursors));
  } catch (const store_unavailable&) {
    // The shared cursors stay where the poll moved them: those messages are lost to it.
  }
}

boost::asio::awaitable<void> broker::load(std::string_view client_id, caller who) {
  if (!share_) co_return;
  std::vector<shared_subscription> subs;
  std::string id(client_id);
  try {
    subs = co_await share_->load(std::move(id));
  } catch (const store_unavailable& e) {
    throw unavailable(e);
  }
  const std::lock_guard lock(mutex_);
  adopt(client_id, subs, who);
}

boost::asio::awaitable<void> broker::save(std::string_view client_id) {
  if (!share_) co_return;
  auto subs = shared_state(client_id);
  std::string id(client_id);
  try {
    co_await share_->save(std::move(id), std::move(subs));
  } catch (const store_unavailable& e) {
    throw unavailable(e);
  }
}

void broker::adopt(std::string_view client_id, const std::vector<shared_subscription>& subs,
                   const caller& who) {
  if (!subs.empty()) {
    // Made on another instance: bound as it was bound there, counted against its caller.
    const std::string& owner = subs.front().owner;
    if (const auto c = clients_.find(client_id); c == clients_.end()) {
      add_client(client_id, owner, owner.empty() ? quota_key(who) : owner);
    } else if (c->second.owner.empty() && !owner.empty()) {
      bind(c->second, owner);
    }
  }
  if (const auto c = clients_.find(client_id); c != clients_.end()) {
    for (const subscription* kept : std::vector(c->second.subscriptions)) {  // ended elsewhere
      if (std::none_of(subs.begin(), subs.end(), [&](const auto& s) { return s.id == kept->id; })) {
        remove_subscription(kept->id);
      }
    }
  }
  for (const auto& shared : subs) {
    const auto d = destinations_.find(shared.destination);
    if (d == destinations_.end()) continue;  // configured on another instance only
    auto it = subscriptions_.find(shared.id);
    if (it == subscriptions_.end()) {
      it = subscriptions_.find(
          new_subscription(clients_.find(client_id)->second, client_id, shared.id, *d->second).id);
    }
    subscription& s = it->second;
    if (s.client != client_id || s.dest->name != shared.destination) continue;
    s.cursor = shared.cursor;
    set_frequency(s, shared.max_frequency);
    const bool same = std::equal(s.filters.begin(), s.filters.end(), shared.filters.begin(),
                                 shared.filters.end(), [](const filter& f, const auto& g) {
                                   return f.subtopic == g.first && f.sel.text() == g.second;
                                 });
    if (same) continue;
    s.filters.clear();
    for (const auto& [subtopic, text] : shared.filters) {
      try {
        s.filters.push_back({subtopic, selector(text)});
      } catch (const selector_error&) {
        // checked where it was subscribed: a selector another version refuses is left out
      }
    }
  }
  forget_if_unused(client_id);
}

std::vector<broker::shared_subscription> broker::shared_state(std::string_view client_id) const {
  const std::lock_guard lock(mutex_);
  std::vector<shared_subscription> out;
  const auto c = clients_.find(client_id);
  if (c == clients_.end()) return out;
  for (const subscription* kept : c->second.subscriptions) {
    const subscription& s = *kept;
    shared_subscription& o = out.emplace_back();
    o.id = s.id;
    o.destination = s.dest->name;
    o.owner = c->second.owner;
    o.cursor = s.cursor;
    o.max_frequency = s.asked;
    for (const auto& f : s.filters) o.filters.emplace_back(f.subtopic, f.sel.text());
  }
  return out;
}

std::shared_ptr<broker::waiter> broker::hold(client& c, std::string_view client_id,
                                             const caller& who,
                                             boost::asio::any_io_executor executor, bool stream,
                                             const char*& refused) {
  const std::string_view session = who.session;
  // Without a session, the FlexClient's own count (a client holds one poll and one stream).
  auto counted = held_per_session_.end();
  if (!session.empty()) {
    counted = held_per_session_.find(session);
    if (counted == held_per_session_.end()) {
      counted = held_per_session_.emplace(std::string(session), 0).first;
    }
  }
  std::size_t& per_session = session.empty() ? c.held : counted->second;
  refused = nullptr;
  if (per_session >= cfg_.max_held_per_session) refused = "messaging.max_held_per_session";
  if (stream ? streams_ >= cfg_.max_streams : parked_ >= cfg_.max_parked) {
    refused = stream ? "messaging.max_streams" : "messaging.max_parked";
  }
  if (refused) {
    if (per_session == 0 && !session.empty()) held_per_session_.erase(counted);
    return nullptr;
  }
  auto w = std::make_shared<waiter>(std::move(executor));
  w->flex_client = client_id;
  w->session = session;
  w->address = who.address;
  w->stream = stream;
  w->counted = true;
  ++per_session;
  ++(stream ? streams_ : parked_);
  (stream ? c.stream : c.parked) = w;
  return w;
}

std::shared_ptr<broker::waiter> broker::park(std::string_view client_id, const caller& who,
                                             boost::asio::any_io_executor executor) {
  const std::lock_guard lock(mutex_);
  if (draining_) return nullptr;
  client& c = claim(client_id, who);
  if (c.parked) {  // a second poll of the client: the first returns (DSNoOpPoll)
    wake_up(c.parked, wake::replaced);
    release(*c.parked, c);
    c.parked.reset();
  }
  const char* refused;
  auto w = hold(c, client_id, who, std::move(executor), false, refused);
  // A message that came after the poll that found nothing and before this park woke no one:
  // the poll reads again at once.
  if (w && std::any_of(c.subscriptions.begin(), c.subscriptions.end(),
                       [](const subscription* s) { return s->cursor < s->dest->next_index; })) {
    w->why = wake::message;
  }
  return w;
}

std::shared_ptr<broker::waiter> broker::open_stream(std::string_view client_id, const caller& who,
                                                    boost::asio::any_io_executor executor,
                                                    std::size_t max_bytes) {
  const std::lock_guard lock(mutex_);
  if (draining_) throw fault("Server.Busy", "the daemon is shutting down");
  client& c = claim(client_id, who);
  if (c.stream) {
    throw fault("Client.Stream.Duplicate",
                "this FlexClient has a stream open on this endpoint already (10033)");
  }
  const char* refused;
  auto w = hold(c, client_id, who, std::move(executor), true, refused);
  if (!w) throw fault("Server.Busy", std::string("no room for another stream: ") + refused);
  w->max_bytes = max_bytes;
  return w;
}

bool broker::close_stream(std::string_view client_id, const caller& who) {
  const std::lock_guard lock(mutex_);
  const client* c = find_client(client_id, who);
  if (!c || !c->stream) return false;
  wake_up(c->stream, wake::replaced);
  return true;
}

void broker::release(waiter& w, client& c) {
  if (!std::exchange(w.counted, false)) return;
  --(w.stream ? streams_ : parked_);
  if (w.session.empty()) {
    --c.held;
  } else if (const auto it = held_per_session_.find(w.session); it != held_per_session_.end()) {
    if (--it->second == 0) held_per_session_.erase(it);
  }
}

void broker::unpark(const std::shared_ptr<waiter>& w) {
  const std::lock_guard lock(mutex_);
  // What was handed over to a stream and not taken is read again by the client's next poll.
  std::vector<waiter::handed> left;
  take(*w, left);
  rewind_locked(w->flex_client, unwritten(left));
  // Still counted, it is still its FlexClient's: a poll that replaced it and a disconnect
  // released it when they took it away (and only a client that holds nothing goes).
  const auto c = clients_.find(w->flex_client);
  if (c == clients_.end()) return;
  release(*w, c->second);
  c->second.seen = clock::now();
  auto& held = w->stream ? c->second.stream : c->second.parked;
  if (held == w) held.reset();
  forget_if_unused(w->flex_client);
}

boost::asio::awaitable<broker::wake> broker::waiter::wait_until(clock::time_point until) {
  namespace net = boost::asio;
  // Read now: once cancelled, every co_await of the coroutine throws at once.
  const auto cancellation = co_await net::this_coro::cancellation_state;
  if (why == wake::none) {
    boost::system::error_code ec;  // cancelled by the broker's wake_up: not an error
    timer.expires_at(until);
    co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
  if (cancellation.cancelled() != net::cancellation_type::none) {
    throw boost::system::system_error(net::error::operation_aborted);
  }
  co_return why.exchange(wake::none);
}

namespace {

// Records why `w` wakes, unless something woke it already: whether this did.
bool first_wake(broker::waiter& w, broker::wake why) {
  auto none = broker::wake::none;
  return w.why.compare_exchange_strong(none, why);
}

}  // namespace

void broker::wake_up(const std::shared_ptr<waiter>& w, wake why) {
  if (!first_wake(*w, why)) return;
  // The timer belongs to the poll's executor (its connection's I/O thread): cancelled there.
  boost::asio::post(w->timer.get_executor(), [w] { w->timer.cancel(); });
}

void broker::wake_all(woken waiters) {
  std::erase_if(waiters, [](const auto& w) { return !first_wake(*w, wake::message); });
  if (waiters.empty()) return;
  // One post to each I/O thread (a connection's executor is its thread's), not one to each
  // waiter: a message for thousands of consumers enters each thread's queue once. Each
  // wakes its own from the one list (not split into one per thread: no allocation per
  // waiter).
  boost::container::small_vector<boost::asio::any_io_executor, 4> threads;
  for (const auto& w : waiters) {
    const auto ex = w->timer.get_executor();
    if (std::find(threads.begin(), threads.end(), ex) == threads.end()) threads.push_back(ex);
  }
  const auto all = std::make_shared<const woken>(std::move(waiters));
  for (const auto& ex : threads) {
    boost::asio::post(ex, [all, ex] {
      for (const auto& w : *all) {
        if (w->timer.get_executor() == ex) w->timer.cancel();
      }
    });
  }
}

void broker::drain() {
  const std::lock_guard lock(mutex_);
  draining_ = true;
  for (auto& [id, c] : clients_) {
    if (c.parked) wake_up(c.parked, wake::drained);
    if (c.stream) wake_up(c.stream, wake::drained);
  }
}

void broker::on_start(std::function<void(boost::asio::any_io_executor)> task) {
  std::unique_lock lock(mutex_);
  if (!executor_) {
    start_tasks_.push_back(std::move(task));
    return;
  }
  const auto ex = *executor_;
  lock.unlock();
  task(ex);
}

void broker::start(boost::asio::any_io_executor executor) {
  std::vector<std::function<void(boost::asio::any_io_executor)>> tasks;
  {
    const std::lock_guard lock(mutex_);
    executor_ = executor;
    tasks.swap(start_tasks_);
  }
  if (share_) share_->start(executor, *this);
  boost::asio::co_spawn(executor, sweeper(), boost::asio::detached);
  for (auto& t : tasks) t(executor);
}

amf::value broker::message_for(amf::document& doc, const delivery& d) {
  const stored& s = *d.message;
  amf::flex::message m;
  m.kind = amf::flex::kind::async;
  // Decoded values point into what they were decoded from: the bytes are copied into `doc`.
  m.body = amf::decode_amf3(doc.copy(amf::as_bytes(s.body)), doc);
  if (!s.headers.empty()) m.headers = amf::decode_amf3(doc.copy(amf::as_bytes(s.headers)), doc);
  m.client_id = doc.string(*d.subscription);
  m.destination = doc.copy(s.destination);
  m.message_id = doc.copy(s.message_id);
  m.timestamp = s.timestamp;
  m.time_to_live = s.time_to_live;
  return amf::flex::make(doc, m);
}

amf::value broker::notice_for(amf::document& doc, const ended& e) {
  amf::flex::message m;
  m.kind = amf::flex::kind::command;
  m.command = static_cast<std::int32_t>(amf::flex::operation::subscription_invalidate);
  m.client_id = doc.string(e.subscription);
  m.destination = doc.copy(e.destination);
  m.message_id = doc.copy(amf::flex::new_uuid());
  m.timestamp = amf::flex::now_ms();
  return amf::flex::make(doc, m);
}

namespace {

// Where the subscription's id goes in a message encoded once: a string no client knows.
const std::string& client_marker() {
  static const std::string marker = "amfgate-client-" + amf::flex::new_uuid();
  return marker;
}

}  // namespace

broker::encoding broker::encoded_for(const stored& m) {
  std::call_once(m.encode_once, [&m] {
    const std::string& marker = client_marker();
    // A message that holds the marker is built for each subscriber: the marker would not
    // be found once.
    for (const std::string* part : {&m.body, &m.headers, &m.destination, &m.message_id}) {
      if (part->find(marker) != std::string::npos) return;
    }
    amf::document doc;
    std::string out;
    // (No owners: the delivery lives only within this call.)
    const std::shared_ptr<const std::string> id(std::shared_ptr<const std::string>(), &marker);
    const std::shared_ptr<const stored> unowned(std::shared_ptr<const stored>(), &m);
    amf::encode_amf3(message_for(doc, {id, unowned}), out);
    // The marker goes inline: its length as a U29 of (size << 1 | 1), then its bytes.
    static_assert(sizeof "amfgate-client-" - 1 + 36 < 64, "the marker's length takes one byte");
    const std::size_t at = out.find(marker);
    if (at == std::string::npos || at == 0 ||
        out[at - 1] != static_cast<char>(marker.size() << 1 | 1)) {
      return;
    }
    m.client_at = at - 1;
    m.client_bytes = marker.size() + 1;
    m.encoded = std::move(out);
  });
  if (m.encoded.empty()) return {};
  const std::string_view all = m.encoded;
  return {all.substr(0, m.client_at), all.substr(m.client_at + m.client_bytes)};
}

broker::stats broker::snapshot() const {
  const std::lock_guard lock(mutex_);
  stats out;
  out.clients = clients_.size();
  out.subscriptions = subscriptions_.size();
  out.parked = parked_;
  out.streams = streams_;
  for (const auto& [name, d] : destinations_) {
    out.destinations.push_back({name, d->published, d->delivered, d->dropped, d->throttled,
                                d->passed, d->examined, d->resumed, d->timed_out,
                                d->subscribers.size(), d->log.size(), d->bytes});
  }
  return out;
}

}  // namespace amfgate::messaging
