// Flex messaging against a live daemon: Consumers and Producers as the Flex SDK sends them
// (flex_messaging.hpp), over plain polls, Consumer.receive() and long-polls.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <future>
#include <thread>

#include "amfgate/services/auth.hpp"
#include "daemon.hpp"
#include "flex_messaging.hpp"

namespace amfgate::test {
namespace {

using namespace std::chrono_literals;
using op = amf::flex::operation;

std::string users() {
  const std::string hash = services::hash_password("pw");
  return R"("users": [{"name": "ann", "password": ")" + hash +
         R"(", "roles": ["admin"]}, {"name": "bob", "password": ")" + hash +
         R"(", "roles": ["user"]}])";
}

const std::string destinations = R"("destinations": {
    "news": {},
    "chat": {"allow_subtopics": true},
    "nowild": {"allow_subtopics": true, "disallow_wildcard_subtopics": true},
    "secure": {"subscribe": {"authenticated": true}, "send": {"roles": ["admin"]}},
    "tiny": {"retention": {"max_messages": 3}},
    "brief": {"message_ttl_ms": 100},
    "ticks": {}})";

// One daemon for the cases that need no settings of their own: long-polling on.
class Messaging : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = std::make_unique<daemon>(
        R"("small_messages": true, "services": {"Ticker": {"interval_ms": 100}},
           "messaging": {"poll_wait_ms": 1500, "client_wait_ms": 0, "busy_wait_ms": 2500,
                         "max_subscriptions_per_client": 8, "stream_heartbeat_ms": 300, )" +
            destinations + "}, " + users(),
        AMFGATE_TEST_DAEMON);  // the Ticker is one of its example services
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::uint16_t port() { return shared->port(); }

  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Messaging::shared;

std::string fault_of(const flex_reply& r) {
  EXPECT_TRUE(r.is_fault());
  EXPECT_TRUE(r.status);
  return std::string(r.m.fault_code) + ": " + std::string(r.m.fault_string);
}

TEST_F(Messaging, AConsumerReceivesWhatAProducerSends) {
  flex_channel reader = connected(port()), writer = connected(port());
  ASSERT_NE(reader.dsid, writer.dsid);
  flex_consumer consumer{reader, "news"};
  const flex_reply sub = consumer.subscribe();
  ASSERT_FALSE(sub.is_fault()) << fault_of(sub);
  EXPECT_EQ(sub.m.kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(consumer.client_id.size(), 36u);  // a subscription id the server made

  flex_producer producer{writer, "news"};
  amf::document doc;
  const amf::value body = doc.string("hello");
  const amf::value msg = producer.async_message(doc, body, {{"price", amf::value::number(3.5)}});
  const flex_reply ack = writer.exchange({msg}).at(0);
  ASSERT_FALSE(ack.is_fault()) << fault_of(ack);
  EXPECT_EQ(ack.m.kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(ack.m.correlation_id, amf::flex::read(msg, doc)->message_id);
  EXPECT_EQ(ack.m.client_id.as_string().size(), 36u);  // the Producer's id, assigned

  const flex_reply polled = reader.poll();
  ASSERT_EQ(polled.m.kind, amf::flex::kind::command);
  EXPECT_EQ(polled.m.command, static_cast<std::int32_t>(op::client_sync));
  EXPECT_EQ(polled.header("DSPollWait").kind(), amf::type::integer);
  EXPECT_EQ(polled.header("DSPollWait").to_double(), 0);  // long-polling: poll again at once
  const auto got = polled.messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kind, amf::flex::kind::async);
  EXPECT_EQ(got[0].body.as_string(), "hello");
  EXPECT_EQ(got[0].client_id.as_string(), consumer.client_id);  // the subscription it is for
  EXPECT_EQ(got[0].destination, "news");
  EXPECT_EQ(got[0].message_id, amf::flex::read(msg, doc)->message_id);
  EXPECT_EQ(got[0].header("price").to_double(), 3.5);
  // The sender's FlexClient and channel stay with the sender.
  EXPECT_EQ(got[0].header("DSId").kind(), amf::type::undefined);
  EXPECT_EQ(got[0].header("DSEndpoint").kind(), amf::type::undefined);

  // Read once: the cursor moved on. An unsubscribed consumer is told so.
  EXPECT_TRUE(consumer.receive().messages().empty());
  ASSERT_FALSE(consumer.unsubscribe().is_fault());
  EXPECT_EQ(fault_of(reader.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
}

TEST_F(Messaging, ALongPollParksUntilAMessageOrItsWaitAndTheAccessLogSaysSo) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "news"};
  ASSERT_FALSE(consumer.subscribe().is_fault());

  // The poll parks (the daemon counts it), and the message wakes it.
  auto parked = std::async(std::launch::async, [&] { return reader.poll(); });
  ASSERT_TRUE(shared->metric_reaches("amfgate_messaging_parked_polls", 1));
  flex_producer producer{writer, "news"};
  ASSERT_FALSE(producer.send("wake up").is_fault());
  EXPECT_EQ(texts(parked.get()), std::vector<std::string>{"wake up"});

  // Nothing comes: it parks, and its wait (1.5 s) runs out with an empty acknowledgement.
  auto waiting = std::async(std::launch::async, [&] { return reader.poll(); });
  ASSERT_TRUE(shared->metric_reaches("amfgate_messaging_parked_polls", 1));
  const flex_reply empty = waiting.get();
  EXPECT_EQ(empty.m.kind, amf::flex::kind::acknowledge);
  EXPECT_TRUE(empty.messages().empty());
  EXPECT_EQ(shared->metric("amfgate_messaging_parked_polls"), 0);
  EXPECT_TRUE(shared->logged(" parked="));  // the access log says how long it parked
}

TEST_F(Messaging, ASecondPollOfTheClientReleasesTheFirstWithDSNoOpPoll) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "news"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  auto first = std::async(std::launch::async, [&] { return reader.poll(); });
  ASSERT_TRUE(shared->metric_reaches("amfgate_messaging_parked_polls", 1));
  // The same FlexClient polls again, on another connection (a browser's second XHR).
  flex_channel again(port());
  again.dsid = reader.dsid;
  auto second = std::async(std::launch::async, [&] { return again.poll(); });
  const flex_reply released = first.get();
  EXPECT_EQ(released.m.kind, amf::flex::kind::command);
  EXPECT_EQ(released.m.command, static_cast<std::int32_t>(op::client_sync));
  EXPECT_TRUE(released.header("DSNoOpPoll").as_bool());
  EXPECT_TRUE(released.messages().empty());
  // It parks in turn (the first was let go before it was answered).
  EXPECT_TRUE(shared->metric_reaches("amfgate_messaging_parked_polls", 1));
  flex_producer producer{writer, "news"};
  ASSERT_FALSE(producer.send("to the second").is_fault());
  EXPECT_EQ(texts(second.get()), std::vector<std::string>{"to the second"});
}

TEST_F(Messaging, PollsInABatchAndConsumerReceiveNeverPark) {
  flex_channel reader = connected(port());
  flex_consumer consumer{reader, "news"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  flex_producer producer{reader, "news"};  // a Producer's own Consumer receives its messages
  // PollingChannel's piggybacking: [POLL, message, POLL].
  amf::document doc;
  const auto replies =
      reader.exchange({reader.poll_message(doc), producer.async_message(doc, doc.string("mine")),
                       reader.poll_message(doc)});
  ASSERT_EQ(replies.size(), 3u);
  EXPECT_EQ(replies[0].m.kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(replies[0].header("DSPollWait").to_double(), 2500);  // could not park: busy_wait
  EXPECT_EQ(texts(replies[2]), std::vector<std::string>{"mine"});
  EXPECT_TRUE(consumer.receive().messages().empty());
  EXPECT_EQ(consumer.receive().header("DSPollWait").kind(), amf::type::undefined);
  // receive() for a consumer the client does not have.
  flex_consumer stranger{reader, "news", "", "", amf::flex::new_uuid()};
  EXPECT_EQ(fault_of(stranger.receive()).rfind("Server.Processing.NotSubscribed", 0), 0u);
}

TEST_F(Messaging, SubtopicsWithWildcards) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer all{reader, "chat", "chat.*"}, room1{reader, "chat", "chat.room1"},
      plain{reader, "chat"}, any{reader, "chat", "*"};
  for (auto* c : {&all, &room1, &plain, &any}) ASSERT_FALSE(c->subscribe().is_fault());
  for (const char* to : {"chat.room1", "chat.room2.deep", "chat", ""}) {
    flex_producer p{writer, "chat", to};
    ASSERT_FALSE(p.send(std::string("to ") + to).is_fault()) << to;
  }
  std::map<std::string, std::vector<std::string>> got;
  const flex_reply polled = reader.poll();  // the messages point into it
  for (const auto& m : polled.messages()) {
    got[std::string(m.client_id.as_string())].emplace_back(m.body.as_string());
  }
  using list = std::vector<std::string>;
  EXPECT_EQ(got[all.client_id], (list{"to chat.room1", "to chat.room2.deep"}));  // not "chat"
  EXPECT_EQ(got[room1.client_id], (list{"to chat.room1"}));
  EXPECT_EQ(got[plain.client_id], (list{"to "}));  // no subtopic: none
  EXPECT_EQ(got[any.client_id], (list{"to chat.room1", "to chat.room2.deep", "to chat"}));

  flex_consumer bad{reader, "chat", "chat.f*"};
  EXPECT_NE(fault_of(bad.subscribe()).find("(10554)"), std::string::npos);
  flex_consumer empty_token{reader, "chat", "chat..x"};
  EXPECT_NE(fault_of(empty_token.subscribe()).find("(10554)"), std::string::npos);
  flex_producer wild{writer, "chat", "chat.*"};
  EXPECT_NE(fault_of(wild.send("x")).find("(10556)"), std::string::npos);
  flex_consumer none{reader, "news", "a"};
  EXPECT_NE(fault_of(none.subscribe()).find("(10553)"), std::string::npos);
  flex_consumer nowild{reader, "nowild", "a.*"};
  EXPECT_NE(fault_of(nowild.subscribe()).find("(10560)"), std::string::npos);
}

TEST_F(Messaging, SelectorsFilterOnHeadersAndABadOneSaysWhere) {
  flex_channel a = connected(port()), b = connected(port()), writer = connected(port());
  flex_consumer orders{a, "news", "", "operation IN ('Bid','Ask')"};
  flex_consumer dear{b, "news", "", "price > 10 AND symbol LIKE 'I%'"};
  ASSERT_FALSE(orders.subscribe().is_fault());
  ASSERT_FALSE(dear.subscribe().is_fault());
  amf::document doc;
  flex_producer p{writer, "news"};
  auto send = [&](const char* text, const char* operation, double price) {
    ASSERT_FALSE(p.send(text, {{"operation", doc.string(operation)},
                               {"price", amf::value::number(price)},
                               {"symbol", doc.string("IBM")}})
                     .is_fault());
  };
  send("bid 5", "Bid", 5);
  send("trade 20", "Trade", 20);
  send("ask 30", "Ask", 30);
  ASSERT_FALSE(p.send("no headers").is_fault());
  EXPECT_EQ(texts(a.poll()), (std::vector<std::string>{"bid 5", "ask 30"}));
  EXPECT_EQ(texts(b.poll()), (std::vector<std::string>{"trade 20", "ask 30"}));

  flex_consumer bad{a, "news", "", "price > "};
  const std::string why = fault_of(bad.subscribe());
  EXPECT_NE(why.find("(10550)"), std::string::npos) << why;
  EXPECT_NE(why.find("at position 8"), std::string::npos) << why;
}

TEST_F(Messaging, MultiTopicSubscriptionsAddAndRemove) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer multi{reader, "chat"};
  multi.client_id = amf::flex::new_uuid();  // MultiTopicConsumer sends its own id
  auto multi_subscribe = [&](std::vector<std::string> add, std::vector<std::string> remove) {
    amf::document doc;
    amf::flex::message m = reader.message(doc, amf::flex::kind::command);
    m.command = static_cast<std::int32_t>(op::multi_subscribe);
    m.destination = "chat";
    m.client_id = doc.string(multi.client_id);
    auto strings = [&](const std::vector<std::string>& list) {
      amf::array_node* a = doc.array();
      for (const auto& s : list) a->dense.push_back(doc.string(s));
      return amf::value::of(a);
    };
    amf::flex::set_header(doc, m, "DSAddSub", strings(add));
    amf::flex::set_header(doc, m, "DSRemSub", strings(remove));
    return reader.exchange({amf::flex::make(doc, m)}).at(0);
  };
  ASSERT_FALSE(
      multi_subscribe({"chat.a_;_", "chat.b_;_urgent = true_;_5", "ignored"}, {}).is_fault());
  amf::document doc;
  for (const char* to : {"chat.a", "chat.b", "chat.c"}) {
    flex_producer p{writer, "chat", to};
    ASSERT_FALSE(p.send(to, {{"urgent", amf::value::boolean(true)}}).is_fault());
    ASSERT_FALSE(p.send(std::string(to) + " later").is_fault());
  }
  EXPECT_EQ(texts(reader.poll()), (std::vector<std::string>{"chat.a", "chat.a later", "chat.b"}));
  ASSERT_FALSE(multi_subscribe({}, {"chat.a_;_"}).is_fault());
  flex_producer p{writer, "chat", "chat.a"};
  ASSERT_FALSE(p.send("gone").is_fault());
  EXPECT_TRUE(multi.receive().messages().empty());
  // The last one removed (with DSlastUnsub, as the SDK sends it): no subscription left.
  ASSERT_FALSE(multi_subscribe({}, {"chat.b_;_urgent = true_;_5"}).is_fault());
  EXPECT_EQ(fault_of(reader.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
}

TEST_F(Messaging, ARetentionBoundLosesTheOldestAndSaysHowMany) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "tiny"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  flex_producer p{writer, "tiny"};
  for (int i = 1; i <= 5; ++i) ASSERT_FALSE(p.send("m" + std::to_string(i)).is_fault());
  const flex_reply r = reader.poll();
  EXPECT_EQ(texts(r), (std::vector<std::string>{"m3", "m4", "m5"}));
  const amf::object_node* lost = r.header("AMFGateMessagesLost").as_object();
  ASSERT_TRUE(lost);
  ASSERT_TRUE(lost->find(consumer.client_id));
  EXPECT_EQ(lost->find(consumer.client_id)->to_double(), 2);
  const auto metrics = shared->client().get("/metrics").body;
  EXPECT_NE(metrics.find("amfgate_messaging_dropped_total{destination=\"tiny\"} 2"),
            std::string::npos);
  EXPECT_NE(metrics.find("amfgate_messaging_published_total{destination=\"tiny\"} 5"),
            std::string::npos);
  EXPECT_NE(metrics.find("amfgate_messaging_delivered_total{destination=\"tiny\"} 3"),
            std::string::npos);
  EXPECT_NE(metrics.find("amfgate_messaging_retained_messages{destination=\"tiny\"} 3"),
            std::string::npos);
}

TEST_F(Messaging, ExpiredMessagesAreNotDelivered) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "brief"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  flex_producer p{writer, "brief"};
  ASSERT_FALSE(p.send("stale").is_fault());
  std::this_thread::sleep_for(250ms);  // past the destination's message_ttl_ms (100)
  ASSERT_FALSE(p.send("fresh").is_fault());
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"fresh"});
}

TEST_F(Messaging, AccessRulesLoginsAndLimits) {
  flex_channel anon = connected(port());
  flex_consumer guest{anon, "secure"};
  EXPECT_EQ(fault_of(guest.subscribe()).rfind("Client.Authentication", 0), 0u);

  flex_channel bob = connected(port());
  amf::document doc;
  ASSERT_FALSE(
      bob.exchange({client::flex_command(doc, op::login, bob.dsid, "bob", "pw")}).at(0).is_fault());
  flex_consumer reader{bob, "secure"};
  ASSERT_FALSE(reader.subscribe().is_fault());
  flex_producer bob_writes{bob, "secure"};
  EXPECT_EQ(fault_of(bob_writes.send("x")).rfind("Client.Authorization", 0), 0u);

  flex_channel ann = connected(port());
  ASSERT_FALSE(
      ann.exchange({client::flex_command(doc, op::login, ann.dsid, "ann", "pw")}).at(0).is_fault());
  flex_producer ann_writes{ann, "secure"};
  ASSERT_FALSE(ann_writes.send("for users").is_fault());
  EXPECT_EQ(texts(reader.receive()), std::vector<std::string>{"for users"});

  // Messaging needs a FlexClient id (a ping first): 10030.
  flex_channel nobody(port());
  flex_producer p{nobody, "news"};
  EXPECT_NE(fault_of(p.send("x")).find("(10030)"), std::string::npos);
  EXPECT_NE(fault_of(nobody.poll()).find("(10030)"), std::string::npos);
  // An unknown destination.
  flex_consumer lost{anon, "nowhere"};
  EXPECT_NE(fault_of(lost.subscribe()).find("no destination \"nowhere\""), std::string::npos);
  // Another FlexClient cannot take a subscription id over: 10559.
  flex_consumer bobs{bob, "news"};
  ASSERT_FALSE(bobs.subscribe().is_fault());
  flex_consumer thief{anon, "news", "", "", bobs.client_id};
  EXPECT_NE(fault_of(thief.subscribe()).find("(10559)"), std::string::npos);
  // max_subscriptions_per_client (8).
  flex_channel greedy = connected(port());
  for (int i = 0; i < 8; ++i) {
    ASSERT_FALSE((flex_consumer{greedy, "news"}.subscribe().is_fault()));
  }
  EXPECT_NE(fault_of(flex_consumer{greedy, "news"}.subscribe()).find("max_subscriptions"),
            std::string::npos);
}

TEST_F(Messaging, DisconnectEndsTheSubscriptions) {
  flex_channel reader = connected(port());
  flex_consumer consumer{reader, "news"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  amf::document doc;
  amf::flex::message m = reader.message(doc, amf::flex::kind::command);
  m.command = static_cast<std::int32_t>(op::disconnect);
  ASSERT_FALSE(reader.exchange({amf::flex::make(doc, m)}).at(0).is_fault());
  EXPECT_EQ(fault_of(reader.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
}

TEST_F(Messaging, TheTickerPublishesFromCpp) {
  flex_channel reader = connected(port());
  flex_consumer consumer{reader, "ticks"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  std::vector<double> sequence;
  for (int i = 0; i < 10 && sequence.size() < 3; ++i) {
    const flex_reply polled = reader.poll();
    for (const auto& m : polled.messages()) {
      const amf::object_node* o = m.body.as_object();
      ASSERT_TRUE(o && o->find("sequence") && o->find("time"));
      EXPECT_EQ(o->find("time")->kind(), amf::type::date);
      sequence.push_back(o->find("sequence")->to_double());
    }
  }
  ASSERT_GE(sequence.size(), 3u);
  for (std::size_t i = 1; i < sequence.size(); ++i) EXPECT_EQ(sequence[i], sequence[i - 1] + 1);
  amf::document doc;
  const auto r = reader.exchange({client::flex_remoting(doc, "Ticker", "published", {}, "")});
  EXPECT_GE(r.at(0).m.body.to_double(), sequence.back());
}

TEST_F(Messaging, AStreamCarriesFramedMessagesAndHeartbeatsUntilItsClientClosesIt) {
  flex_channel channel = connected(port()), writer = connected(port());
  const char* safari = "Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15";
  flex_stream stream(port(), channel.dsid, safari);
  ASSERT_EQ(stream.status, 200u) << stream.head;
  EXPECT_TRUE(stream.chunked);
  EXPECT_NE(stream.head.find("Content-Type: application/x-amf"), std::string::npos);
  EXPECT_NE(stream.head.find("Connection: close"), std::string::npos);
  amf::document doc;
  // Kick-start padding for Safari (512 bytes with its framing), then "connected".
  const auto open = stream.next(doc);
  ASSERT_TRUE(open);
  EXPECT_EQ(stream.padding_frames, 1u);
  EXPECT_EQ(stream.padding_bytes + 3 + 4, 512u);
  EXPECT_EQ(open->kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(open->correlation_id, "open");
  const std::string stream_id(open->body.as_string());
  EXPECT_EQ(stream_id.size(), 36u);

  // Subscribed over the channel's POSTs; what is published arrives on the stream.
  flex_consumer consumer{channel, "news", "", "kind = 'stream'"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  flex_producer producer{writer, "news"};
  ASSERT_FALSE(producer.send("not for it").is_fault());
  ASSERT_FALSE(producer.send("streamed", {{"kind", doc.string("stream")}}).is_fault());
  const auto pushed = stream.next(doc);
  ASSERT_TRUE(pushed);
  EXPECT_EQ(pushed->kind, amf::flex::kind::async);
  EXPECT_EQ(pushed->body.as_string(), "streamed");
  EXPECT_EQ(pushed->client_id.as_string(), consumer.client_id);

  // Silence: heartbeat bytes between frames (stream_heartbeat_ms 300).
  EXPECT_FALSE(stream.next(doc, 800));
  EXPECT_GE(stream.heartbeats, 1u);
  EXPECT_NE(shared->client().get("/metrics").body.find("amfgate_messaging_open_streams 1"),
            std::string::npos);

  // One stream per FlexClient; bad opens are 400s.
  flex_stream second(port(), channel.dsid);
  EXPECT_EQ(second.status, 400u);
  auto http = shared->client();
  const std::string form = "application/x-www-form-urlencoded";
  EXPECT_EQ(http.post("/messagebroker/amf?command=open&version=1", "", form).status, 400u);
  EXPECT_EQ(http.post("/messagebroker/amf?command=reopen", "DSId=" + channel.dsid, form).status,
            400u);

  // The client's close ends the stream (the last chunk), not its subscriptions.
  const auto closed =
      http.post("/messagebroker/amf?command=close&streamId=" + stream_id + "&version=1",
                "DSId=" + channel.dsid, form);
  EXPECT_EQ(closed.status, 200u);
  EXPECT_FALSE(stream.next(doc));
  EXPECT_TRUE(stream.ended);
  ASSERT_FALSE(producer.send("kept", {{"kind", doc.string("stream")}}).is_fault());
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"kept"});
  EXPECT_TRUE(shared->logged("streamed="));
}

TEST(MessagingDaemon, AHandlerPublishesThroughItsCallContext) {
  daemon d(R"("messaging": {)" + destinations + "}", AMFGATE_TEST_DAEMON);
  flex_channel reader = connected(d.port());
  flex_consumer consumer{reader, "chat", "chat.*", "room = 'lobby'"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  amf::document doc;
  for (const char* room : {"lobby", "kitchen"}) {
    const std::vector<amf::value> args{doc.string(room), doc.string(std::string("hi ") + room)};
    const auto r = reader.exchange({client::flex_remoting(doc, "Chat", "post", args, "")});
    ASSERT_FALSE(r.at(0).is_fault()) << r.at(0).m.fault_string;
  }
  const flex_reply polled = reader.poll();
  EXPECT_EQ(texts(polled), std::vector<std::string>{"hi lobby"});
  EXPECT_EQ(polled.messages().at(0).header("DSSubtopic").as_string(), "chat.lobby");
}

TEST(MessagingDaemon, PlainPollingARestartAndShutdown) {
  const std::string settings =
      R"("messaging": {"max_parked": 1, "poll_wait_ms": 20000, )" + destinations + "}";
  auto d = std::make_unique<daemon>(settings);
  flex_channel reader = connected(d->port());
  flex_consumer consumer{reader, "news"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  const std::string old_id = consumer.client_id;

  // max_parked 1: a second client's poll cannot park and is told to come back later.
  flex_channel other = connected(d->port());
  ASSERT_FALSE((flex_consumer{other, "news"}.subscribe().is_fault()));
  auto parked = std::async(std::launch::async, [&] { return reader.poll(); });
  ASSERT_TRUE(d->metric_reaches("amfgate_messaging_parked_polls", 1));
  const flex_reply refused = other.poll();
  EXPECT_EQ(refused.m.kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(refused.header("DSPollWait").to_double(), 3000);

  // Shutdown: the parked poll answers at once, an open stream gets a DISCONNECT command
  // and ends, and the daemon exits well within its grace.
  flex_stream stream(d->port(), other.dsid);
  amf::document doc;
  ASSERT_TRUE(stream.next(doc));  // "connected"
  d->signal(SIGTERM);
  const flex_reply released = parked.get();
  EXPECT_EQ(released.m.kind, amf::flex::kind::acknowledge);
  const auto bye = stream.next(doc);
  ASSERT_TRUE(bye);
  EXPECT_EQ(bye->kind, amf::flex::kind::command);
  EXPECT_EQ(bye->command, static_cast<std::int32_t>(op::disconnect));
  EXPECT_FALSE(stream.next(doc));
  EXPECT_TRUE(stream.ended);
  EXPECT_EQ(d->wait(), 0);
  EXPECT_EQ(d->log().find("grace period over"), std::string::npos);  // ended within it

  // After the restart the subscription is gone: NotSubscribed, then the Consumer
  // resubscribes with its old id and receives again. Plain polling: no DSPollWait.
  d = std::make_unique<daemon>(R"("messaging": {)" + destinations + "}");
  flex_channel back(d->port());
  back.dsid = reader.dsid;
  EXPECT_EQ(fault_of(back.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
  flex_consumer again{back, "news", "", "", old_id};
  ASSERT_FALSE(again.subscribe().is_fault());
  EXPECT_EQ(again.client_id, old_id);
  flex_channel writer = connected(d->port());
  ASSERT_FALSE((flex_producer{writer, "news"}.send("after the restart").is_fault()));
  const flex_reply r = back.poll();
  EXPECT_EQ(texts(r), std::vector<std::string>{"after the restart"});
  EXPECT_EQ(r.header("DSPollWait").kind(), amf::type::undefined);
  const flex_reply empty = back.poll();  // nothing: an empty acknowledgement (no parking)
  EXPECT_EQ(empty.m.kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(empty.header("DSPollWait").kind(), amf::type::undefined);
}

}  // namespace
}  // namespace amfgate::test
