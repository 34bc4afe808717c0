// A Flex messaging client on the codec, for the tests: what the Flex SDK's AMFChannel /
// PollingChannel, Consumer and Producer put on the wire (docs/wire.md),
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
#include "raw_socket.hpp"

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
    return replies(res.body);
  }
  /// As exchange, but nullopt for what a balancer in front of a dying instance answers: no
  /// connection, or an HTTP status other than 200 (nginx's 502).
  std::optional<std::vector<flex_reply>> try_exchange(const std::vector<amf::value>& messages) {
    client::response res;
    try {
      res = http_->post(path_, client::flex_request(messages));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (res.status != 200) return std::nullopt;
    return replies(res.body);
  }

  std::string dsid;

 private:
  std::vector<flex_reply> replies(const std::string& bytes) {
    auto body = std::make_shared<std::string>(bytes);
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
  /// Consumer.maxFrequency: sent as DSMaxFrequency with a subscribe (an AMF3 integer, as
  /// the SDK's uint, when it is one).
  std::optional<double> max_frequency;

  /// A command of this Consumer's, with `headers` of its own besides (their values live in
  /// the caller's document until this returns).
  flex_reply command(amf::flex::operation op,
                     const std::vector<std::pair<std::string, amf::value>>& headers = {}) {
    amf::document doc;
    amf::flex::message m = channel.message(doc, amf::flex::kind::command);
    m.command = static_cast<std::int32_t>(op);
    m.destination = destination;
    if (!client_id.empty()) m.client_id = doc.string(client_id);
    if (!subtopic.empty()) amf::flex::set_header(doc, m, "DSSubtopic", doc.string(subtopic));
    if (!selector.empty()) amf::flex::set_header(doc, m, "DSSelector", doc.string(selector));
    if (max_frequency && op == amf::flex::operation::subscribe) {
      const double f = *max_frequency;
      const bool integer = f >= 0 && f < (1 << 28) && f == static_cast<std::int32_t>(f);
      amf::flex::set_header(
          doc, m, "DSMaxFrequency",
          integer ? amf::value::integer(static_cast<std::int32_t>(f)) : amf::value::number(f));
    }
    for (const auto& [name, v] : headers) amf::flex::set_header(doc, m, name, v);
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

/// StreamingAMFChannel's stream: `POST <path>?command=open&version=1` with the form body
/// `DSId=<id>`, read as StreamingConnectionHandler reads it: the HTTP chunks decoded, then
/// inner frames "<hex>\r\n<bytes>\r\n", 0x00 heartbeats between them, frames that start
/// with 0x00 (kick-start padding) skipped, each frame one AMF3 value.
class flex_stream {
 public:
  flex_stream(std::uint16_t port, std::string_view dsid,
              std::string_view user_agent = "amfgate-test", std::string path = "/messagebroker/amf")
      : socket_(port) {
    const std::string body = "DSId=" + std::string(dsid);
    socket_.send("POST " + path + "?command=open&version=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                 "Content-Type: application/x-www-form-urlencoded\r\nUser-Agent: " +
                 std::string(user_agent) + "\r\nContent-Length: " + std::to_string(body.size()) +
                 "\r\n\r\n" + body);
    while (raw_.find("\r\n\r\n") == std::string::npos && fill()) {
    }
    const auto end = raw_.find("\r\n\r\n");
    if (end == std::string::npos) return;
    head = raw_.substr(0, end + 2);
    raw_.erase(0, end + 4);
    status = static_cast<unsigned>(std::stoul(head.substr(9, 3)));
    chunked = head.find("Transfer-Encoding: chunked") != std::string::npos;
    if (!chunked) payload_ = raw_;  // an error answer, its body as it is
  }

  /// The next frame's value (its views live in `doc`), skipping heartbeats and padding;
  /// nullopt when the stream ends or nothing comes within `timeout_ms`.
  std::optional<amf::flex::message> next(amf::document& doc, int timeout_ms = 3000) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      // The SDK: skip 0x00 where a size is expected, read hex up to CR, then LF.
      while (!payload_.empty() && payload_[0] == '\0') {
        payload_.erase(0, 1);
        ++heartbeats;
      }
      const auto cr = payload_.find("\r\n");
      if (cr != std::string::npos) {
        const std::size_t size = std::stoul(payload_.substr(0, cr), nullptr, 16);
        if (payload_.size() >= cr + 2 + size + 2) {
          frame_ = payload_.substr(cr + 2, size);
          payload_.erase(0, cr + 2 + size + 2);
          if (!frame_.empty() && frame_[0] == '\0') {
            ++padding_frames;
            padding_bytes += frame_.size();
            continue;
          }
          const auto bytes = doc.copy(amf::as_bytes(frame_));  // the values point into it
          return amf::flex::read(amf::decode_amf3(bytes, doc), doc);
        }
      }
      if (ended || std::chrono::steady_clock::now() >= until) return std::nullopt;
      fill_chunk();
    }
  }

  std::string head;
  unsigned status = 0;
  bool chunked = false, ended = false;
  std::size_t heartbeats = 0, padding_frames = 0, padding_bytes = 0;

 private:
  bool fill() {
    const std::string more = socket_.read_some(500);
    raw_ += more;
    return !more.empty();
  }
  // One HTTP chunk into the payload (the decoded body).
  bool fill_chunk() {
    for (;;) {
      const auto cr = raw_.find("\r\n");
      if (cr != std::string::npos) {
        const std::size_t size = std::stoul(raw_.substr(0, cr), nullptr, 16);
        if (size == 0) {
          ended = true;
          return false;
        }
        if (raw_.size() >= cr + 2 + size + 2) {
          payload_ += raw_.substr(cr + 2, size);
          raw_.erase(0, cr + 2 + size + 2);
          return true;
        }
      }
      if (!fill()) return false;
    }
  }

  raw_socket socket_;
  std::string raw_, payload_, frame_;
};

/// A channel to the daemon on `port`, connected.
inline flex_channel connected(std::uint16_t port) {
  flex_channel c(port);
  c.connect();
  return c;
}

/// The Flex SDK's login (ChannelSet.login) on `c`: whether it was accepted.
inline bool login(flex_channel& c, std::string_view user, std::string_view password) {
  amf::document doc;
  return !c.exchange(
               {client::flex_command(doc, amf::flex::operation::login, c.dsid, user, password)})
              .at(0)
              .is_fault();
}

/// "code: string" of a fault; empty for an answer that is not one.
inline std::string fault_text(const flex_reply& r) {
  return r.is_fault() ? std::string(r.m.fault_code) + ": " + std::string(r.m.fault_string) : "";
}

/// A Consumer of `destination` on `c`, subscribed.
inline flex_consumer subscribed(flex_channel& c, std::string destination) {
  flex_consumer consumer{c, std::move(destination)};
  EXPECT_EQ(fault_text(consumer.subscribe()), "");
  return consumer;
}

/// The bodies (strings) of a poll reply's messages.
inline std::vector<std::string> texts(const flex_reply& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages()) {
    out.emplace_back(m.body.kind() == amf::type::string ? m.body.as_string() : "<not a string>");
  }
  return out;
}

}  // namespace amfgate::test
