// Messages handed over to an open stream as they are published (broker::hand_over), and the
// AsyncMessage encoded once for every subscriber (broker::encoded_for): no message is lost,
// repeated or reordered by the short way, and its bytes decode to what a poll builds.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/flex.hpp"
#include "amfgate/messaging/broker.hpp"
#include "amfgate/messaging/stream.hpp"

namespace amfgate::messaging {
namespace {

using handed = broker::waiter::handed;

config::messaging_settings two_destinations(std::size_t per_poll = 1000) {
  config::messaging_settings cfg;
  cfg.destinations["news"].allow_subtopics = true;
  cfg.destinations["sport"];
  cfg.max_messages_per_poll = per_poll;
  return cfg;
}

// The numbers in the bodies of `taken` and then of `polled`, in that order.
std::vector<double> bodies(const std::vector<handed>& taken, const broker::batch& polled) {
  std::vector<double> out;
  amf::document doc;
  for (const auto& h : taken) {
    out.push_back(amf::decode_amf3(amf::as_bytes(h.message->body), doc).to_double());
  }
  for (const auto& d : polled.messages) {
    out.push_back(amf::decode_amf3(amf::as_bytes(d.message->body), doc).to_double());
  }
  return out;
}

// A broker whose FlexClient "client" subscribed as "sub" to news (on `subtopic`), and opened
// a stream that has read all there was.
struct streaming {
  explicit streaming(const char* subtopic = "") {
    m.subscribe("client", "sub", "news", subtopic, "", 0, nullptr, {});
    w = m.open_stream("client", {}, io.get_executor());
    w->poll_needed = false;
  }
  broker m{two_destinations()};
  boost::asio::io_context io;
  std::shared_ptr<broker::waiter> w;
};

TEST(HandOver, AStreamThatHasReadAllGetsEachNewMessageWithoutAPoll) {
  broker m(two_destinations());
  boost::asio::io_context io;
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  m.publish("news", amf::value::number(1));  // no stream yet: it waits for a poll
  auto w = m.open_stream("client", {}, io.get_executor());
  m.publish("news", amf::value::number(2));  // behind by one: not handed over either
  std::vector<handed> taken;
  broker::take(*w, taken);
  EXPECT_TRUE(taken.empty());
  EXPECT_TRUE(w->poll_needed.exchange(false));
  EXPECT_EQ(bodies(taken, m.poll("client", "", {})), (std::vector<double>{1, 2}));
  m.publish("news", amf::value::number(3));
  m.publish("news", amf::value::number(4));
  EXPECT_EQ(w->why, broker::wake::message);
  EXPECT_FALSE(w->poll_needed);  // handed over, both
  broker::take(*w, taken);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(*taken[0].subscription, "sub");
  // Their cursor moved: a poll reads neither again.
  EXPECT_EQ(bodies(taken, m.poll("client", "", {})), (std::vector<double>{3, 4}));
  EXPECT_EQ(m.snapshot().destinations.front().delivered, 4u);
  m.unpark(w);
}

TEST(HandOver, PastWhatAPollReadsAtOnceTheRestIsPolledInOrder) {
  broker m(two_destinations(3));
  boost::asio::io_context io;
  m.subscribe("client", "a", "news", "", "", 0, nullptr, {});
  m.subscribe("client", "b", "sport", "", "", 0, nullptr, {});
  auto w = m.open_stream("client", {}, io.get_executor());
  w->poll_needed = false;
  for (int i = 1; i <= 8; ++i) m.publish(i % 2 ? "news" : "sport", amf::value::number(i));
  EXPECT_TRUE(w->poll_needed);
  std::vector<handed> taken;
  broker::take(*w, taken);
  ASSERT_EQ(taken.size(), 3u);  // the queue's bound; the rest waits in the log
  auto got = bodies(taken, {});
  for (broker::batch b; !(b = m.poll("client", "", {})).messages.empty();) {
    const auto more = bodies({}, b);
    got.insert(got.end(), more.begin(), more.end());
  }
  EXPECT_EQ(got, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
  m.unpark(w);
}

TEST(HandOver, WhatAStreamDidNotTakeOrWriteIsReadAgainByTheNextPoll) {
  streaming s;
  auto& [m, io, w] = s;
  m.publish("news", amf::value::number(1));
  m.publish("news", amf::value::number(2));
  std::vector<handed> taken;
  broker::take(*w, taken);                   // taken, and then not written
  m.publish("news", amf::value::number(3));  // handed over, never taken
  // The stream ends: what it did not take goes back at once, what it did not write with
  // the rewind its writer starts.
  m.unpark(w);
  boost::asio::co_spawn(io, m.rewind("client", broker::unwritten(taken)), boost::asio::detached);
  io.run();
  EXPECT_EQ(bodies({}, m.poll("client", "", {})), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(m.poll("client", "", {}).lost.empty());
}

TEST(HandOver, AStreamPieceNotWrittenGoesBackWhole) {
  broker m(two_destinations(1));  // a hand-over at a time: the second message is polled
  boost::asio::io_context io;
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  stream frames(m, m.open_stream("client", {}, io.get_executor()), "stream", 0,
                std::chrono::seconds(30), SIZE_MAX);
  std::string piece;
  const auto next = [&] {
    boost::asio::co_spawn(
        io, [&]() -> boost::asio::awaitable<void> { piece = co_await frames.next(); },
        boost::asio::detached);
    io.restart();
    io.run();
  };
  next();                                    // the stream's acknowledgement
  m.publish("news", amf::value::number(1));  // handed over
  m.publish("news", amf::value::number(2));  // past the hand-over's bound: read by a poll
  next();
  ASSERT_FALSE(piece.empty());
  frames.unwritten();  // (its rewind runs on the stream's executor)
  io.restart();
  io.run();
  auto got = bodies({}, m.poll("client", "", {}));
  const auto more = bodies({}, m.poll("client", "", {}));
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got, (std::vector<double>{1, 2}));
  EXPECT_TRUE(m.poll("client", "", {}).lost.empty());
}

TEST(HandOver, MessagesASubscriptionDoesNotSelectKeepItCaughtUp) {
  streaming s("scores");
  auto& [m, io, w] = s;
  m.publish("news", amf::value::number(1), "weather");
  m.publish("news", amf::value::number(2), "scores");
  std::vector<handed> taken;
  broker::take(*w, taken);
  EXPECT_FALSE(w->poll_needed);
  EXPECT_EQ(bodies(taken, m.poll("client", "", {})), std::vector<double>{2});
  m.unpark(w);
}

TEST(EncodedOnce, TheSplicedBytesAreWhatAPollEncodesForEachSubscriber) {
  broker m(two_destinations());
  boost::asio::io_context io;
  // Strings that repeat, one of them a subscriber's id: the references after the clientId
  // must still point where they did.
  const std::string ids[] = {"sub-one", "a-much-longer-subscription-id-" + std::string(80, 'x')};
  for (const auto& id : ids) m.subscribe("client-" + id, id, "news", "", "", 0, nullptr, {});
  amf::document doc;
  amf::object_node* body = doc.object();
  body->dynamic.push_back({"who", doc.string(ids[0])});
  body->dynamic.push_back({"again", doc.string(ids[0])});
  body->dynamic.push_back({"text", doc.string("hello")});
  m.publish("news", amf::value::of(body), {}, {{"note", doc.string("hello")}});
  for (const auto& id : ids) {
    const auto b = m.poll("client-" + id, "", {});
    ASSERT_EQ(b.messages.size(), 1u);
    const auto [before, after] = broker::encoded_for(*b.messages[0].message);
    ASSERT_FALSE(before.empty());
    std::string spliced(before);
    // The id as an AMF3 string: (size << 1 | 1) as a U29 (one or two bytes here), then it.
    const auto v = static_cast<unsigned>(id.size() << 1 | 1);
    if (v >= 0x80) spliced += static_cast<char>(v >> 7 | 0x80);
    spliced += static_cast<char>(v & 0x7f);
    spliced += id;
    spliced += after;
    std::string built;
    amf::encode_amf3(broker::message_for(doc, b.messages[0]), built);
    amf::document a, c;
    EXPECT_TRUE(amf::equivalent(amf::decode_amf3(amf::as_bytes(spliced), a),
                                amf::decode_amf3(amf::as_bytes(built), c)))
        << id;
    const auto got = amf::flex::read(amf::decode_amf3(amf::as_bytes(spliced), a), a);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->client_id.as_string(), id);
  }
}

}  // namespace
}  // namespace amfgate::messaging
