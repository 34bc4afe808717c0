// A Flex messaging client on the codec, for the tests: what the Flex SDK's AMFChannel /
// PollingChannel, Consumer and Producer put on the wire (../shared/spec/flex-pubsub.md 1.1-1.7),
// message by message, and the replies as they come back.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"

namespace amfgate::test {

/// One reply: the Flex message (its views live in `doc`) and whether it came as /onStatus.
struct flex_reply {
  std::shared_ptr<amf::document> doc;
  amf::flex::message m;
  bool status = false;

  bool is_fault() const { return m.kind == amf::flex::kind::error; }
  amf::value header(std::string_view name) const { return m.header(name); }
  /// The messages of a CLIENT_SYNC poll reply (empty for an acknowledgement).
  std::vector<amf::flex::message> messages() const {
    std::vector<amf::flex::message> out;
    if (m.kind != amf::flex::kind::command) return out;
    if (const amf::array_node* a = m.body.as_array()) {
      for (const auto& v : a->dense) {
        auto read = amf::flex::read(v, *doc);
        if (read) out.push_back(*read);
      }
    }
    return out;
  }
};

/// A channel: one HTTP connection, a FlexClient id from its ping, DSEndpoint as a Flex
/// channel id.
class flex_channel {
 public:
  flex_channel(std::uint16_t port, std::string endpoint = "my-polling-amf",
               std::string path = "/messagebroker/amf")
      : http_(std::make_unique<client::http_client>("127.0.0.1", std::to_string(port))),
        path_(std::move(path)),
        endpoint_(std::move(endpoint)) {}

  /// Channel.connect: a CLIENT_PING that gets the DSId.
  void connect() {
    amf::document doc;
    const auto r = exchange({client::flex_command(doc, amf::flex::operation::client_ping, dsid)});
    ASSERT_FALSE(r.at(0).is_fault()) << r.at(0).m.fault_string;
    dsid = std::string(r.at(0).header("DSId").as_string());
  }

  /// A message as this channel sends it: DSId and DSEndpoint set.
  amf::flex::message message(amf::document& doc, amf::flex::kind kind) const {
    amf::flex::message m;
    m.kind = kind;
    m.message_id = doc.copy(amf::flex::new_uuid());
    m.body = amf::value::of(doc.object());
    amf::flex::set_header(doc, m, "DSEndpoint", doc.string(endpoint_));
    amf::flex::set_header(doc, m, "DSId", doc.string(dsid.empty() ? "nil" : dsid));
    return m;
  }

  /// PollingChannel.internalPoll: a general poll (clientId null).
  amf::value poll_message(amf::document& doc) const {
    amf::flex::message m = message(doc, amf::flex::kind::command);
    m.command = static_cast<std::int32_t>(amf::flex::operation::poll);
    return amf::flex::make(doc, m);
  }
  flex_reply poll() {
    amf::document doc;
    return exchange({poll_message(doc)}).at(0);
  }

  /// One packet of messages (a batch when more than one), its replies in order.
  std::vector<flex_reply> exchange(const std::vector<amf::value>& messages) {
    const auto res = http_->post(path_, client::flex_request(messages));
    EXPECT_EQ(res.status, 200u) << res.body;
    auto body = std::make_shared<std::string>(res.body);
    auto doc = std::shared_ptr<amf::document>(new amf::document, [body](amf::document* d) {
      delete d;  // the document's values point into `body`: it goes after
    });
    const amf::packet p = amf::decode_packet(amf::as_bytes(*body), *doc);
    std::vector<flex_reply> out;
    for (const auto& b : p.bodies) {
      auto m = amf::flex::read(b.val, *doc);
      EXPECT_TRUE(m) << "not a Flex message";
      if (m) out.push_back({doc, *m, b.target.ends_with("/onStatus")});
    }
    return out;
  }

  std::string dsid;

 private:
  std::unique_ptr<client::http_client> http_;  // a pointer, so that a channel moves
  std::string path_, endpoint_;
};

/// mx.messaging.Consumer on a channel.
struct flex_consumer {
  flex_consumer(flex_channel& c, std::string dest, std::string sub = {}, std::string sel = {},
                std::string id = {})
      : channel(c),
        destination(std::move(dest)),
        subtopic(std::move(sub)),
        selector(std::move(sel)),
        client_id(std::move(id)) {}

  flex_channel& channel;
  std::string destination, subtopic, selector;
  std::string client_id;  ///< from the subscribe ack; kept to resubscribe

  flex_reply command(amf::flex::operation op) {
    amf::document doc;
    amf::flex::message m = channel.message(doc, amf::flex::kind::command);
    m.command = static_cast<std::int32_t>(op);
    m.destination = destination;
    if (!client_id.empty()) m.client_id = doc.string(client_id);
    if (!subtopic.empty()) amf::flex::set_header(doc, m, "DSSubtopic", doc.string(subtopic));
    if (!selector.empty()) amf::flex::set_header(doc, m, "DSSelector", doc.string(selector));
    return channel.exchange({amf::flex::make(doc, m)}).at(0);
  }
  /// AbstractConsumer.subscribe: adopts the ack's clientId.
  flex_reply subscribe() {
    flex_reply r = command(amf::flex::operation::subscribe);
    if (!r.is_fault()) client_id = r.m.client_id.as_string();
    return r;
  }
  flex_reply unsubscribe() { return command(amf::flex::operation::unsubscribe); }
  /// Consumer.receive(): a poll for this consumer only.
  flex_reply receive() { return command(amf::flex::operation::poll); }
};

/// mx.messaging.Producer on a channel.
struct flex_producer {
  flex_producer(flex_channel& c, std::string dest, std::string sub = {})
      : channel(c), destination(std::move(dest)), subtopic(std::move(sub)) {}

  flex_channel& channel;
  std::string destination, subtopic;
  std::string client_id;  ///< from the first ack

  amf::value async_message(amf::document& doc, amf::value body,
                           const std::vector<std::pair<std::string, amf::value>>& headers = {}) {
    amf::flex::message m = channel.message(doc, amf::flex::kind::async);
    m.destination = destination;
    m.body = body;
    if (!client_id.empty()) m.client_id = doc.string(client_id);
    if (!subtopic.empty()) amf::flex::set_header(doc, m, "DSSubtopic", doc.string(subtopic));
    for (const auto& [name, v] : headers) amf::flex::set_header(doc, m, name, v);
    return amf::flex::make(doc, m);
  }
  flex_reply send(amf::value body,
                  const std::vector<std::pair<std::string, amf::value>>& headers = {}) {
    amf::document doc;
    flex_reply r = channel.exchange({async_message(doc, body, headers)}).at(0);
    if (!r.is_fault() && client_id.empty()) client_id = r.m.client_id.as_string();
    return r;
  }
  flex_reply send(std::string_view text,
                  const std::vector<std::pair<std::string, amf::value>>& headers = {}) {
    amf::document doc;
    return send(doc.string(text), headers);
  }
};

/// The bodies (strings) of a poll reply's messages.
inline std::vector<std::string> texts(const flex_reply& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages()) {
    out.emplace_back(m.body.kind() == amf::type::string ? m.body.as_string() : "<not a string>");
  }
  return out;
}

}  // namespace amfgate::test
