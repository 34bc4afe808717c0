// The message broker of Flex messaging: destinations that Producers and C++ code publish to
// and Consumers subscribe to (docs/wire.md, docs/messaging.md; BlazeDS's MessageService with
// its ActionScriptAdapter). The daemon's run() owns one; services see it as their
// services::publisher, and the Flex channel (channel.hpp) drives it for the clients.
//
// A destination is a log: it keeps its recent messages in order, within its retention bound
// (count and bytes). A subscription is a cursor into it: a poll reads on from where its
// FlexClient read last, keeps what the subscription's subtopic and selector select, and
// moves the cursor. So memory is bounded by retention, not by how slow a consumer is, and a
// consumer that fell behind what is kept is told how many messages it lost.
//
// Everything here is thread-safe.
//
// Several instances share destinations and subscriptions through a `shared_store` (Redis:
// amfgate/server/redis_messaging.hpp): a destination's log is then the shared one, which every
// instance mirrors, and a FlexClient's subscriptions with their cursors live in the store, read
// before and written after each exchange, so that any instance can serve any poll.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "amf/value.hpp"
#include "amfgate/config.hpp"
#include "amfgate/messaging/selector.hpp"
#include "amfgate/messaging/subtopic.hpp"
#include "amfgate/services/auth.hpp"
#include "amfgate/services/fault.hpp"
#include "amfgate/services/publisher.hpp"

namespace amf::flex {
struct message;
}

namespace amfgate::messaging {

class shared_store;

/// Who makes a messaging request: the HTTP session it carries (empty: none, or one the
/// store does not know) and its client address. A FlexClient used with a session is bound to
/// it: from then on only requests of that session reach it (a DSId alone is not enough).
/// FlexClients and subscriptions are counted per caller: the session, or the address of a
/// request without one.
struct caller {
  std::string_view session, address;
};

/// Told of what Flex Producers send to a destination whose settings name an upstream in
/// `forward` (the bridge), after it is published. It copies what it keeps before it returns,
/// and never blocks.
class forwarder {
 public:
  virtual ~forwarder() = default;
  virtual void forward(std::string_view upstream, const amf::flex::message& m,
                       std::string_view subtopic, const services::principal* user) = 0;
};

class broker final : public services::publisher {
 public:
  /// A message as a destination keeps it: owned, read by any number of subscriptions.
  struct stored {
    std::uint64_t index = 0;  ///< in its destination's log
    std::uint64_t order = 0;  ///< across destinations: the order of publication here
    std::string destination, message_id, subtopic;
    std::string body;     ///< AMF3
    std::string headers;  ///< AMF3 object, or empty for none
    selector_properties properties;
    double timestamp = 0, time_to_live = 0;
    std::chrono::steady_clock::time_point expires = std::chrono::steady_clock::time_point::max();
    std::size_t property_bytes = 0;  ///< what `properties` holds: names and strings
    std::size_t bytes() const {
      return 256 + body.size() + headers.size() + subtopic.size() + property_bytes;
    }

    /// The AsyncMessage as a subscriber receives it, as AMF3: encoded once, on first use,
    /// with a marker where the subscription's id (its clientId) goes (`encoded_for`).
    mutable std::once_flag encode_once;
    mutable std::string encoded;           ///< empty: the message holds the marker itself
    mutable std::size_t client_at = 0;     ///< where the clientId string starts in `encoded`
    mutable std::size_t client_bytes = 0;  ///< and how long it is there
  };

  /// One message for one subscription.
  struct delivery {
    std::shared_ptr<const std::string> subscription;  ///< its id, shared with it: no copy
    std::shared_ptr<const stored> message;
  };

  /// What a poll reads.
  /// A subscription's cursor as a poll moved it: from `from` to `to`.
  struct moved {
    std::shared_ptr<const std::string> subscription;  ///< its id, shared with it
    std::uint64_t from = 0, to = 0;
    std::uint64_t delivered = 0;  ///< of the batch's messages, this subscription's
    std::uint64_t reads = 0;      ///< the subscription's count of reads after this one
  };
  /// A subscription that ended without its Consumer asking (its destination's
  /// subscription_timeout, its FlexClient's idle timeout): its FlexClient is told with a
  /// SUBSCRIPTION_INVALIDATE command by its next poll or its stream, as BlazeDS did.
  struct ended {
    std::string subscription, destination;
  };
  struct batch {
    std::vector<delivery> messages;
    std::vector<ended> invalidated;  ///< to tell the client of, before its messages
    /// Subscription id: messages that fell out of retention before this client read them,
    /// that were larger than any reply may be, or whose reply was not written.
    std::map<std::string, std::uint64_t> lost;
    std::vector<moved> cursors;  ///< for `rewind`, if the reply is not written
    /// When a subscription held back by its frequency (throttle_outbound, maxFrequency) may
    /// take its next message: read again then. max(): nothing is held back.
    std::chrono::steady_clock::time_point due = std::chrono::steady_clock::time_point::max();
  };

  /// Why a parked poll or a stream's wait came back: a message for it, another poll of its
  /// client (or a disconnect, or the client's close of its stream), shutdown.
  enum class wake : int { none, message, replaced, drained };

  /// A parked poll or an open stream. Its writer waits on `timer`; the broker cancels it to
  /// wake it.
  struct waiter {
    explicit waiter(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    /// Waits, on the timer's executor, until `until` or until the broker wakes it (at once
    /// if it has been woken already): why, none when the time ran out. Throws
    /// operation_aborted when the awaiting coroutine is cancelled (its client went away).
    boost::asio::awaitable<wake> wait_until(std::chrono::steady_clock::time_point until);

    boost::asio::steady_timer timer;
    std::atomic<wake> why{wake::none};
    std::string flex_client, session, address;  ///< the caller that holds it
    bool stream = false;
    /// In the held counts while its FlexClient holds it (guarded by the broker's mutex).
    bool counted = false;

    // An open stream's messages, handed over as they are published (`take`): while its
    // FlexClient has read all there was, a new message for it goes here with its cursor
    // moved past it, and the stream writes it without a poll.
    struct handed {
      std::shared_ptr<const std::string> subscription;
      std::shared_ptr<const stored> message;
      std::uint64_t reads = 0;  ///< the subscription's count of reads when it was handed
    };
    std::size_t max_bytes = SIZE_MAX;  ///< what one piece of the stream may carry
    std::mutex handed_mutex;           ///< taken after the broker's, never before it
    std::vector<handed> queue;         ///< guarded by handed_mutex
    std::size_t queue_bytes = 0;       ///< guarded by handed_mutex
    /// Something for the stream was not handed over (past the queue's bounds, or shared):
    /// its next read polls.
    std::atomic<bool> poll_needed{true};
  };

  /// A subscription as instances share it.
  struct shared_subscription {
    std::string id, destination;
    std::string owner;  ///< the session its FlexClient is bound to; empty: none
    std::vector<std::pair<std::string, std::string>> filters;  ///< subtopic, selector
    std::uint64_t cursor = 0;
    std::uint32_t max_frequency = 0;  ///< what the Consumer asked for; 0: nothing
  };

  struct destination_stats {
    std::string name;
    std::uint64_t published = 0, delivered = 0;
    std::uint64_t dropped = 0;    ///< by retention, unread
    std::uint64_t throttled = 0;  ///< sent past throttle_inbound: faulted or dropped
    /// Passed by a subscription without being delivered: past its frequency (policy
    /// "ignore"), or superseded by a newer message of its subtopic ("conflate").
    std::uint64_t passed = 0;
    /// Messages polls looked at to choose what to deliver: each about once per subscription
    /// that reads it, whatever the policy, and one more for each poll a frequency stops.
    std::uint64_t examined = 0;
    std::uint64_t resumed = 0;    ///< subscriptions a resubscribe continued from their cursor
    std::uint64_t timed_out = 0;  ///< subscriptions ended by subscription_timeout
    std::size_t subscriptions = 0, kept = 0, kept_bytes = 0;
  };
  struct stats {
    std::size_t clients = 0, subscriptions = 0, parked = 0, streams = 0;
    std::vector<destination_stats> destinations;
  };

  explicit broker(config::messaging_settings settings = {});
  ~broker() override;
  broker(const broker&) = delete;
  broker& operator=(const broker&) = delete;

  const config::messaging_settings& settings() const noexcept { return cfg_; }

  // services::publisher
  void publish(std::string_view destination, const amf::value& body, std::string_view subtopic = {},
               const std::vector<header>& headers = {}) override;
  void on_start(std::function<void(boost::asio::any_io_executor)> task) override;
  using services::publisher::authorize;
  void authorize(std::string_view destination, authorizer hook) override;

  // --- for the daemon and the channel ---

  /// Shares destinations and subscriptions with other instances through `share`, which
  /// outlives its use here (null: no more). Before `start`.
  void share(shared_store* share);
  /// Where destinations with `forward` send what Producers publish (null: nowhere). Before
  /// `start`.
  void forward_through(forwarder* f) { forwarder_ = f; }
  void start(boost::asio::any_io_executor executor);
  /// A Producer's AsyncMessage (DSId and DSEndpoint are not kept), once the destination's
  /// roles and its hook (publisher::authorize) allow it. Throws `fault`.
  boost::asio::awaitable<void> send(const amf::flex::message& m, const services::principal* user);
  /// Before a subscribe: whether `user` may subscribe to `destination` (its roles) and to each
  /// of `subtopics` (its hook, if it has one, asked in turn). Throws Client.Authorization
  /// (BlazeDS's 10557) for the first refused.
  boost::asio::awaitable<void> admit_subscribe(std::string_view destination,
                                               std::span<const std::string_view> subtopics,
                                               const services::principal* user);
  /// The subtopics that MULTI_SUBSCRIBE entries (DSAddSub) add, for `admit_subscribe`: throws
  /// as `multi_subscribe` does for more than max_filters_per_subscription, or a bad entry.
  std::vector<std::string_view> entry_subtopics(std::span<const std::string_view> entries) const;
  // Each call below that names a FlexClient for a `caller` throws Client.Authorization when
  // the FlexClient is bound to another session (`owner` says which), and Server.Processing
  // for an id longer than max_id_bytes or past the caller's quotas.

  /// The most messages a second a Consumer may ask for (DSMaxFrequency, and the third
  /// field of a MULTI_SUBSCRIBE entry).
  static constexpr std::uint32_t max_consumer_frequency = 1000;
  /// A DSMaxFrequency header: 0 when it is absent (no bound). Throws Server.Processing for
  /// anything but a whole number from 1 to max_consumer_frequency.
  static std::uint32_t consumer_frequency(const amf::value& header);

  /// SUBSCRIBE of `subscription` (the client's id, or a new one) by FlexClient `client`,
  /// which asks for at most `max_frequency` messages a second (0: no bound).
  void subscribe(std::string_view client, std::string_view subscription,
                 std::string_view destination, std::string_view subtopic,
                 std::string_view selector_text, std::uint32_t max_frequency,
                 const services::principal* user, const caller& who);
  /// UNSUBSCRIBE: the (subtopic, selector) pair goes; the subscription goes with its last one,
  /// kept for resume_window when `preserve` (DSPreserveDurable).
  void unsubscribe(std::string_view client, std::string_view subscription,
                   std::string_view subtopic, std::string_view selector_text, const caller& who,
                   bool preserve = false);
  /// MULTI_SUBSCRIBE: DSAddSub / DSRemSub entries "subtopic_;_selector[_;_maxFrequency]",
  /// at most max_filters_per_subscription of each. The subscription's frequency is the
  /// smallest of `max_frequency` and its entries' (as BlazeDS chose per entry).
  void multi_subscribe(std::string_view client, std::string_view subscription,
                       std::string_view destination, std::span<const std::string_view> add,
                       std::span<const std::string_view> remove, std::uint32_t max_frequency,
                       const services::principal* user, const caller& who);
  /// DISCONNECT by the client: as `end`, for its own caller only, but its subscriptions are
  /// kept for resume_window.
  void disconnect(std::string_view client, const caller& who);
  /// Every subscription of `client` goes, and a poll or stream it holds returns: its
  /// session ended (a logout, or the session is gone), or it disconnected.
  void end(std::string_view client);
  /// The session `client` is bound to: empty when it is bound to none, or unknown here.
  std::string owner(std::string_view client) const;
  /// Whether `client` is bound to `session`, or to none (or is unknown here).
  bool owned_by(std::string_view client, std::string_view session) const;
  /// Whether a shared store holds the subscriptions: then `load`, `save` and `async_poll`
  /// reach it, and without one they need not be awaited.
  bool shared() const noexcept { return share_ != nullptr; }
  /// A login moved the session `from` to a new id `to`: a FlexClient bound to `from` follows.
  void rebind(std::string_view client, std::string_view from, std::string_view to);
  /// What waits for `client`: all its subscriptions (a general poll), or `subscription` only
  /// (Consumer.receive()). Throws Server.Processing.NotSubscribed when there is none.
  /// A message larger than `max_bytes` (as kept) is never delivered: it is counted lost. The
  /// messages of a batch are at most `max_bytes` together, and the rest waits.
  batch poll(std::string_view client, std::string_view subscription, const caller& who,
             std::size_t max_bytes = SIZE_MAX);
  /// `poll`, shared: reads the client's subscriptions from the share first, and writes the
  /// cursors it moved back before it returns. What the arguments view is read until it
  /// returns (as below): the awaiting coroutine holds it.
  boost::asio::awaitable<batch> async_poll(std::string_view client, std::string_view subscription,
                                           caller who, std::size_t max_bytes = SIZE_MAX);
  /// The reply that carried `b` was not written (the client went away, the daemon's memory
  /// budget refused it): each cursor it moved goes back, unless another poll moved it since;
  /// then its messages are counted lost, and the next poll says so (AMFGateMessagesLost).
  boost::asio::awaitable<void> rewind(std::string client, std::vector<moved> cursors);
  /// Shared: reads the subscriptions of `client` from the share, before a change to them.
  boost::asio::awaitable<void> load(std::string_view client, caller who);
  /// Shared: writes the subscriptions of `client` to the share, after a change to them.
  boost::asio::awaitable<void> save(std::string_view client);
  /// From the share: the next message of a destination's shared log.
  void mirror(std::shared_ptr<stored> m);
  /// From the share: the subscriptions of `client` changed on another instance; what it
  /// holds open here reads them again.
  void changed(std::string_view client);
  /// A message read back from where it was kept (a shared log): its selector properties
  /// and expiry restored.
  static std::shared_ptr<stored> restore(std::string destination, std::uint64_t index,
                                         std::string message_id, std::string subtopic,
                                         std::string body, std::string headers, double timestamp,
                                         double time_to_live);

  /// Registers a parked poll for `client`: a poll it parked before returns (`replaced`).
  /// Null when the limits (max_parked, max_held_per_session) leave no room, or draining.
  std::shared_ptr<waiter> park(std::string_view client, const caller& who,
                               boost::asio::any_io_executor executor);
  /// Registers the open stream of `client`, whose pieces carry at most `max_bytes`. Throws
  /// fault Server.Busy past max_streams or max_held_per_session, or draining;
  /// Client.Stream.Duplicate (10033) while one is open.
  std::shared_ptr<waiter> open_stream(std::string_view client, const caller& who,
                                      boost::asio::any_io_executor executor,
                                      std::size_t max_bytes = SIZE_MAX);
  /// What was handed over to the stream `w` since the last call, swapped into `into` (whose
  /// old contents go). Its cursors have moved: `rewind` them if they are not written.
  static void take(waiter& w, std::vector<waiter::handed>& into);
  /// The cursors of messages handed over and not written, for `rewind`.
  static std::vector<moved> unwritten(const std::vector<waiter::handed>& handed);
  /// The client's own close (`command=close`): its stream ends; false if it has none (or it
  /// is bound to another session).
  bool close_stream(std::string_view client, const caller& who);
  /// A parked poll returned, or a stream ended.
  void unpark(const std::shared_ptr<waiter>& w);
  /// Shutdown: every parked poll returns and none parks any more.
  void drain();
  /// The AsyncMessage of `d` as its subscriber receives it, built in `doc`.
  static amf::value message_for(amf::document& doc, const delivery& d);
  /// The SUBSCRIPTION_INVALIDATE command (operation 10) that tells a Consumer its subscription
  /// ended, built in `doc`: the SDK's Consumer then stops being subscribed.
  static amf::value notice_for(amf::document& doc, const ended& e);
  /// The same as AMF3, encoded once per message: the bytes before and after the
  /// subscription's id, which goes between them as an AMF3 string. Empty `before` when the
  /// message cannot be (it holds the marker): then `message_for`.
  struct encoding {
    std::string_view before, after;
  };
  static encoding encoded_for(const stored& m);

  stats snapshot() const;

 private:
  struct filter {
    std::string subtopic;  ///< empty: messages without a subtopic only
    selector sel;
  };
  struct destination;
  struct client;
  /// Under "conflate", what a subscription keeps: by subtopic, the index of the newest
  /// message it selects of those from its cursor to `scanned`, so that a poll examines each
  /// message once and not all that wait. Valid while the cursor is `at`: moved by anything
  /// else (a rewind, a resume, a stream, retention), it is built again. An entry goes as the
  /// cursor passes its message, so the keys view subtopics of messages the log still keeps,
  /// and there are no more than waiting messages (retention bounds them).
  struct conflation {
    std::unordered_map<std::string_view, std::uint64_t> newest;
    std::uint64_t at = 0, scanned = 0;
  };
  struct subscription {
    std::string id, client;
    destination* dest = nullptr;     ///< destinations live as long as the broker
    struct client* owner = nullptr;  ///< `client` in clients_, kept while it has subscriptions
    std::vector<filter> filters;
    std::uint64_t cursor = 0;  ///< the index of the next message to read
    std::uint64_t lost = 0;    ///< not delivered and not yet reported
    std::uint64_t reads = 0;   ///< polls that moved the cursor: a rewind checks none did since
    std::shared_ptr<const std::string> shared_id;  ///< `id`, as handed over with messages
    std::uint32_t asked = 0;                       ///< the Consumer's maxFrequency (0: none)
    /// When it was last subscribed, or last had a message delivered (subscription_timeout).
    std::chrono::steady_clock::time_point used;
    /// What it may still take, against its frequency: a bucket of a second's messages (as
    /// throttle_inbound's), refilled as time passes. `last` is zero until the first subscribe.
    struct {
      double tokens = 0;
      std::chrono::steady_clock::time_point last;
    } outbound;
    std::unique_ptr<conflation> conflated;  ///< under "conflate" only, from its first poll
  };
  struct client {
    std::vector<subscription*> subscriptions;  ///< in subscriptions_
    std::shared_ptr<waiter> parked, stream;
    std::size_t held = 0;  ///< of them, those counted without a session
    std::chrono::steady_clock::time_point seen;
    std::string owner;  ///< the session it is bound to; empty: none
    std::string quota;  ///< the key of what it counts against in per_caller_
  };
  /// What one caller (a session, or an address without one) holds.
  struct held_by_caller {
    std::size_t clients = 0, subscriptions = 0;
  };
  using woken = std::vector<std::shared_ptr<waiter>>;
  /// A subscription that ended without an unsubscribe, kept for resume_window: a
  /// resubscribe with its id by the same FlexClient (and session) continues from its cursor.
  struct resumable {
    std::string client, owner;
    destination* dest = nullptr;
    std::vector<filter> filters;
    std::uint64_t cursor = 0, lost = 0;
    std::uint32_t asked = 0;
    std::chrono::steady_clock::time_point until;
  };

  destination& find(std::string_view name);
  /// Asks the hook of `d`, if it has one: throws Client.Authorization when it refuses.
  boost::asio::awaitable<void> admit(destination& d, services::access_request a);
  /// Ends the subscriptions of `d` that timed out (subscription_timeout), telling their
  /// FlexClients.
  void time_out(destination& d, std::chrono::steady_clock::time_point now);
  /// Keeps what the FlexClient of `s` is told when `s` ends without its asking, and wakes
  /// what it holds open to tell it.
  void tell_ended(const subscription& s);
  /// What FlexClient `client` is to be told, moved into `out`, if `who` may see it.
  void take_ended(std::string_view client, const caller& who, batch& out);
  /// Runs `sweep` as time passes, with no request needed.
  boost::asio::awaitable<void> sweeper();
  /// Null when a Producer's message from FlexClient `client_id` is within the
  /// throttle_inbound of `d` (and then counted against it); else why not.
  const char* throttled(destination& d, std::string_view client_id);
  void check(const std::optional<config::access_rule>& rule, const services::principal* user,
             std::string_view what, std::string_view where) const;
  /// Appends `m` to the log of `d`, under the mutex: the waiters it is for, to be woken
  /// once the mutex is released (wake_all).
  woken append(destination& d, std::shared_ptr<stored> m);
  /// `append` under the mutex, then wakes the waiters it is for.
  void append_and_wake(destination& d, std::shared_ptr<stored> m);
  static bool selects(const subscription& s, const stored& m);
  /// The messages a second `s` may take (0: no bound).
  static std::uint32_t rate_of(const subscription& s);
  /// `rate_of`, with its bucket refilled for the time since.
  static std::uint32_t refill(subscription& s, std::chrono::steady_clock::time_point now);
  /// `poll`'s read of one subscription, from its cursor: what it delivers goes in `out`;
  /// past what examined. Holds back what is past its frequency (`out.due` says until when),
  /// passes what its destination's policy passes.
  std::uint64_t read_subscription(subscription& s, batch& out, std::size_t max_bytes,
                                  std::chrono::steady_clock::time_point now,
                                  std::vector<std::pair<subscription*, std::uint64_t>>& oversized);
  /// Under "conflate", what `s` keeps, brought up to the end of its destination's log.
  static conflation& conflated(subscription& s, std::chrono::steady_clock::time_point now);
  /// Under the mutex, as `m` is appended: true when it is dealt with for `s` without a poll
  /// (handed over to the stream of its FlexClient, or passed as not selected).
  bool hand_over(subscription& s, const std::shared_ptr<const stored>& m, bool selected,
                 std::chrono::steady_clock::time_point now);
  /// `n` messages went to `s` (a poll read them, or its stream was handed one): it was used
  /// now, and they count against its frequency.
  static void delivered_to(subscription& s, std::uint64_t n,
                           std::chrono::steady_clock::time_point now);
  /// `rewind` of the subscriptions of `client_id`, under the mutex: each cursor goes back,
  /// unless a poll read on since (`reads` counts them); then the next poll reports it lost.
  void rewind_locked(std::string_view client_id, const std::vector<moved>& cursors);
  /// Adds the (subtopic, selector) pair to the subscription, made if it is new: the
  /// subscription it is in.
  subscription& add_filter(std::string_view client, std::string_view subscription, destination& d,
                           std::string_view subtopic, std::string_view selector_text,
                           const caller& who);
  /// The Consumer asked for `max_frequency` (0: no bound) for `s`.
  static void set_frequency(subscription& s, std::uint32_t max_frequency);
  /// `end`, under the mutex; its subscriptions kept for resume_window when `keep`.
  void end_locked(std::string_view client, bool keep);
  subscription& new_subscription(client& c, std::string_view client_id,
                                 std::string_view subscription_id, destination& d);
  void adopt(std::string_view client, const std::vector<shared_subscription>& subs,
             const caller& who);
  std::vector<shared_subscription> shared_state(std::string_view client) const;
  /// The subscription goes; kept for resume_window when `keep`.
  void remove_subscription(const std::string& id, bool keep = false);
  /// The resumable subscription `id` may be continued by FlexClient `client` of `who` into
  /// `d`: null when there is none; throws when it is another's.
  resumable* resumable_for(std::string_view id, std::string_view client, const destination& d,
                           const caller& who);
  void forget_if_unused(std::string_view client);
  /// The FlexClient `id` for `who`, made if it is new: within the caller's quota, bound to
  /// its session. Throws as the public calls say.
  client& claim(std::string_view id, const caller& who);
  /// The FlexClient `id` if there is one and `who` may use it; null if there is none.
  client* find_client(std::string_view id, const caller& who);
  /// A new FlexClient `id`, bound to `owner` (empty: none), counted against `quota`.
  client& add_client(std::string_view id, std::string_view owner, std::string quota);
  /// Binds `c` to `session`, and counts it against that session from now on.
  void bind(client& c, std::string_view session);
  void erase_client(std::string_view id, bool keep = false);
  held_by_caller& quota_of(const std::string& key);
  void release_quota(const std::string& key, std::size_t clients, std::size_t subscriptions);
  void sweep();
  static void wake_up(const std::shared_ptr<waiter>& w, wake why);
  static void wake_all(woken waiters);
  /// Takes a parked poll or a stream of `c` out of the counts (once), when `c` lets it go.
  void release(waiter& w, client& c);
  /// A waiter for `client` within the limits, or the reason there is none.
  std::shared_ptr<waiter> hold(client& c, std::string_view client_id, const caller& who,
                               boost::asio::any_io_executor executor, bool stream,
                               const char*& refused);

  config::messaging_settings cfg_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<destination>, std::less<>> destinations_;
  // Looked up by id on every poll and for every subscriber of every message: hashed.
  struct id_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view id) const noexcept {
      return std::hash<std::string_view>{}(id);
    }
  };
  template <class T>
  using by_id = std::unordered_map<std::string, T, id_hash, std::equal_to<>>;
  by_id<subscription> subscriptions_;
  by_id<client> clients_;
  by_id<resumable> resumable_;  ///< at most max_subscriptions, expired by `sweep`
  /// By FlexClient: the subscriptions it is to be told ended (`tell_ended`).
  struct to_tell {
    std::string owner;  ///< the session the FlexClient was bound to
    std::vector<ended> subscriptions;
    std::chrono::steady_clock::time_point until;
  };
  by_id<to_tell> to_tell_;
  std::size_t telling_ = 0;  ///< what to_tell_ holds: at most max_subscriptions
  std::map<std::string, std::size_t, std::less<>> held_per_session_;  ///< with a session
  std::unordered_map<std::string, held_by_caller> per_caller_;
  std::size_t parked_ = 0, streams_ = 0;
  std::uint64_t order_ = 0;
  bool draining_ = false;
  std::chrono::steady_clock::time_point next_sweep_;
  std::vector<std::function<void(boost::asio::any_io_executor)>> start_tasks_;
  std::optional<boost::asio::any_io_executor> executor_;
  shared_store* share_ = nullptr;
  forwarder* forwarder_ = nullptr;
};

}  // namespace amfgate::messaging
