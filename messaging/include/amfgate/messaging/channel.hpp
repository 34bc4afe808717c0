// The Flex channel: what a Flex client's messaging does over HTTP, on top of the broker. The
// gateway hands it the messaging commands of a request (SUBSCRIBE, UNSUBSCRIBE,
// MULTI_SUBSCRIBE, DISCONNECT, POLL) and a Producer's AsyncMessages; the router hands it a
// StreamingAMFChannel's open and close. It checks the FlexClient id (DSId), reads a
// FlexClient from a shared store before it acts on it and writes it back after, ends a
// FlexClient whose session has ended, and parks a long poll (docs/messaging.md,
// docs/wire.md "Polling, long-polling, streaming").
//
// A new Flex messaging command is one case in `command` (channel.cpp).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "amf/flex.hpp"
#include "amf/value.hpp"
#include "amfgate/messaging/broker.hpp"
#include "amfgate/messaging/stream.hpp"
#include "amfgate/services/auth.hpp"
#include "amfgate/services/session.hpp"

namespace amfgate::messaging {

/// What the channel tells the request that a command came in (the gateway's), as a poll
/// parks and answers.
class reply_hooks {
 public:
  virtual ~reply_hooks() = default;
  /// Before a poll first waits: the HTTP layer then watches for the client going away.
  virtual void waiting() = 0;
  /// True when a poll parks and false when it stops waiting: a parked poll holds no place in
  /// limits.max_requests_per_client.
  virtual void parked(bool on) = 0;
  /// How long the poll was parked.
  virtual void parked_for(double ms) = 0;
  /// `undo` runs if the reply is not written (the client went away, or a 503 replaced it):
  /// the poll's cursors go back, so that nothing it read is lost.
  virtual void on_unwritten(std::function<void()> undo) = 0;
};

/// One Flex message of a request, as the channel sees it.
struct command_context {
  amf::document& doc;  ///< where the reply is built
  caller who;
  const services::principal* user = nullptr;
  /// The packet carries other messages too: a poll among them does not park.
  bool batched = false;
  reply_hooks& hooks;
};

class channel {
 public:
  /// A poll's reply carries at most `max_response_bytes`, less room for the packet's other
  /// answers; a stream's piece at most that much.
  channel(broker& b, services::session_store& sessions, std::size_t max_response_bytes);

  /// Whether `command` (a CommandMessage operation) is the channel's to answer.
  static bool handles(std::int32_t command);
  /// A messaging command of `handles`: the acknowledgement's body. A poll with messages turns
  /// `reply` into a CLIENT_SYNC command (in full form: `small` goes false). Throws `fault`.
  boost::asio::awaitable<amf::value> command(const amf::flex::message& in,
                                             amf::flex::message& reply, bool& small,
                                             command_context& cx);
  /// A Producer's AsyncMessage. Throws `fault`.
  boost::asio::awaitable<void> send(const amf::flex::message& in, const services::principal* user);

  /// The stream of FlexClient `client`, for a request whose session cookie is `session_id`
  /// from `address` (the client's, without its port), with the kick-start padding its
  /// `user_agent` needs. Throws fault Server.Busy past the limits, Client.Stream.Duplicate
  /// while it has one open, Client.Authorization when the FlexClient is another session's,
  /// Server.Session.Unavailable when the session store cannot be reached.
  boost::asio::awaitable<std::unique_ptr<stream>> open_stream(std::string_view client,
                                                              std::string_view session_id,
                                                              std::string_view address,
                                                              std::string_view user_agent);
  /// The client's own close of its stream: false if it has none open. Throws as `open_stream`.
  boost::asio::awaitable<bool> close_stream(std::string_view client, std::string_view session_id,
                                            std::string_view address);
  /// A logout of session `who.session`: the subscriptions that FlexClient `client` made
  /// under it end with it.
  boost::asio::awaitable<void> logout(std::string_view client, caller who);

  /// A login moved session `who.session` to a new id `to`: FlexClient `client`, if it is
  /// bound to the old one, follows.
  boost::asio::awaitable<void> rebind(std::string_view client, caller who, std::string_view to);

  broker& messages() noexcept { return broker_; }

 private:
  /// The FlexClient id (DSId) of a message, a view into it; fault 10030 without one.
  static std::string_view flex_client(const amf::flex::message& in);
  /// POLL: the messages waiting (a CLIENT_SYNC command), or an empty acknowledgement; a
  /// general poll parks while there are none, with long-polling on.
  boost::asio::awaitable<amf::value> poll(const amf::flex::message& in, amf::flex::message& reply,
                                          bool& small, command_context& cx);
  /// SUBSCRIBE, UNSUBSCRIBE and MULTI_SUBSCRIBE.
  boost::asio::awaitable<void> subscription(const amf::flex::message& in,
                                            const amf::flex::message& ack, command_context& cx);
  /// Whether a FlexClient needs `load_owned` before the channel acts on it: not without a
  /// shared store when it is bound to the caller's session or to none (the usual poll, which
  /// then awaits no coroutine of its own for it).
  bool needs_loading(std::string_view client, const caller& who) const;
  /// A FlexClient, before the channel acts on it: read from the shared store (with several
  /// instances: its subscriptions, and whom it is bound to), then `check_owner`.
  boost::asio::awaitable<void> load_owned(std::string_view client, caller who);
  /// A FlexClient bound to another session than `session` (empty: none) that has ended (a
  /// logout, its idle timeout) ends with it, so the caller finds it gone. One bound to a live
  /// session stays, and the broker refuses the caller.
  boost::asio::awaitable<void> check_owner(std::string_view client, std::string_view session);
  /// `id` if the session store knows that session, else empty (a made-up or ended cookie).
  boost::asio::awaitable<std::string> known_session(std::string_view id);

  broker& broker_;
  services::session_store& sessions_;
  std::size_t max_response_bytes_;
};

}  // namespace amfgate::messaging
