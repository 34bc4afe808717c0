#include "amfgate/messaging/broker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <thread>

#include "amf/flex.hpp"

namespace amfgate::messaging {
namespace {

using services::fault;

TEST(Subtopics, MatchTokenByTokenWithATrailingWildcardReachingDeeper) {
  EXPECT_TRUE(subtopic_matches("chat.room1", "chat.room1", "."));
  EXPECT_FALSE(subtopic_matches("chat.room1", "chat.room2", "."));
  EXPECT_TRUE(subtopic_matches("chat.*", "chat.room1", "."));
  EXPECT_TRUE(subtopic_matches("chat.*", "chat.room1.table2", "."));
  EXPECT_FALSE(subtopic_matches("chat.*", "chat", "."));
  EXPECT_TRUE(subtopic_matches("*", "anything.at.all", "."));
  EXPECT_TRUE(subtopic_matches("*.room1", "chat.room1", "."));
  EXPECT_FALSE(subtopic_matches("*.room1", "chat.room1.x", "."));
  EXPECT_TRUE(subtopic_matches("a::*::c", "a::b::c", "::"));

  config::destination_settings d;
  EXPECT_THROW(check_subtopic(d, "a", false), fault);  // 10553: none allowed
  d.allow_subtopics = true;
  check_subtopic(d, "a.b.*", false);
  EXPECT_THROW(check_subtopic(d, "a.b.*", true), fault);  // 10556: sent to a wildcard
  EXPECT_THROW(check_subtopic(d, "a..b", false), fault);  // 10554
  EXPECT_THROW(check_subtopic(d, "a.b*", false), fault);
  d.disallow_wildcard_subtopics = true;
  EXPECT_THROW(check_subtopic(d, "a.*", false), fault);  // 10560
}

// A broker with one destination, "news".
config::messaging_settings news_only() {
  config::messaging_settings cfg;
  cfg.destinations["news"];
  return cfg;
}

TEST(MessagingState, NothingIsKeptForAFlexClientWithoutSubscriptionsOrConnections) {
  broker m(news_only());
  boost::asio::io_context io;
  // Streams opened and closed with made-up DSIds.
  for (int i = 0; i < 100; ++i) {
    auto w = m.open_stream(amf::flex::new_uuid(), {}, io.get_executor());
    m.unpark(w);
  }
  // Subscribe and unsubscribe rounds.
  for (int i = 0; i < 100; ++i) {
    const std::string client = amf::flex::new_uuid(), id = amf::flex::new_uuid();
    m.subscribe(client, id, "news", "", "", 0, nullptr, {});
    m.unsubscribe(client, id, "", "", {});
  }
  auto s = m.snapshot();
  EXPECT_EQ(s.clients, 0u);
  EXPECT_EQ(s.subscriptions, 0u);
  EXPECT_EQ(s.streams, 0u);
  // One that subscribes is kept, and its parked poll is counted until it returns.
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  auto w = m.park("client", {}, io.get_executor());
  ASSERT_TRUE(w);
  EXPECT_EQ(m.snapshot().parked, 1u);
  m.publish("news", amf::value::number(1));
  EXPECT_EQ(w->why, broker::wake::message);
  m.unpark(w);
  s = m.snapshot();
  EXPECT_EQ(s.clients, 1u);
  EXPECT_EQ(s.parked, 0u);
  EXPECT_EQ(m.poll("client", "", {}).messages.size(), 1u);
}

// What a Consumer's maxFrequency holds back waits in the log, and the batch says when the
// next is due: polls at those times read all of it, in order, none lost.
TEST(MessagingState, AFrequencyHoldsTheRestBackUntilItIsDue) {
  broker m(news_only());
  const auto started = std::chrono::steady_clock::now();
  // As the smaller of the header's and a MULTI_SUBSCRIBE entry's: 10.
  const std::vector<std::string_view> add{"_;__;_10"};
  m.multi_subscribe("client", "sub", "news", add, {}, 50, nullptr, {});
  for (int i = 0; i < 25; ++i) m.publish("news", amf::value::number(i));
  std::vector<std::uint64_t> got;  // the messages' indexes in the log
  broker::batch b = m.poll("client", "", {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_GE(b.messages.size(), 10u);
  EXPECT_LE(static_cast<double>(b.messages.size()), 10 + 10 * seconds + 1);
  for (;;) {
    EXPECT_TRUE(b.lost.empty());
    for (const auto& d : b.messages) got.push_back(d.message->index);
    if (got.size() >= 25) break;
    ASSERT_NE(b.due, std::chrono::steady_clock::time_point::max());  // held back: when
    std::this_thread::sleep_until(b.due);
    b = m.poll("client", "", {});
  }
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i);
  EXPECT_EQ(m.poll("client", "", {}).due, std::chrono::steady_clock::time_point::max());
}

// A FlexClient that timed out leaves its subscriptions as cursors for resume_window: its
// resubscribe with the same clientId reads on from where it stopped. No other FlexClient,
// and no other session, may take one.
TEST(MessagingState, ATimedOutSubscriptionIsResumedByItsOwnFlexClientOnly) {
  auto cfg = news_only();
  cfg.client_idle_timeout = std::chrono::milliseconds(1);
  cfg.resume_window = std::chrono::minutes(1);
  broker m(cfg);
  const caller ann{"session-ann", "10.0.0.1:1"}, other{"session-bob", "10.0.0.2:1"};
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, ann);
  m.publish("news", amf::value::number(1));
  EXPECT_EQ(m.poll("client", "", ann).messages.size(), 1u);
  m.publish("news", amf::value::number(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the idle timeout
  EXPECT_THROW(m.poll("client", "", ann), fault);             // swept: NotSubscribed
  EXPECT_EQ(m.snapshot().subscriptions, 0u);
  m.publish("news", amf::value::number(3));
  EXPECT_THROW(m.subscribe("intruder", "sub", "news", "", "", 0, nullptr, ann), fault);
  EXPECT_THROW(m.subscribe("client", "sub", "news", "", "", 0, nullptr, other), fault);
  EXPECT_EQ(m.snapshot().clients, 0u);  // the refused ones left nothing
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, ann);
  const auto b = m.poll("client", "", ann);
  ASSERT_EQ(b.messages.size(), 2u);  // what came while it was away, in order
  EXPECT_EQ(b.messages[0].message->index, 1u);
  EXPECT_EQ(b.messages[1].message->index, 2u);
  EXPECT_TRUE(b.lost.empty());
  EXPECT_EQ(m.snapshot().destinations.at(0).resumed, 1u);
  // Resumed once: the same id again is a subscription from now.
  m.unsubscribe("client", "sub", "", "", ann);
  m.publish("news", amf::value::number(4));
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, ann);
  EXPECT_TRUE(m.poll("client", "", ann).messages.empty());
}

// Subscriptions that nothing reached for subscription_timeout end, and their FlexClient is
// told on its next poll, once, and only within its session. What is to be told is bounded as
// the subscriptions were (max_subscriptions): past it, the FlexClient finds them gone.
TEST(MessagingState, WhatTimedOutSubscriptionsAreToldIsBoundedAndToldOnce) {
  auto cfg = news_only();
  cfg.max_subscriptions = 2;
  cfg.destinations["news"].subscription_timeout = std::chrono::milliseconds(1);
  broker m(cfg);
  const caller ann{"session-ann", "10.0.0.1:1"}, bob{"session-bob", "10.0.0.2:1"};
  m.subscribe("first", "a", "news", "", "", 0, nullptr, ann);
  m.subscribe("first", "b", "news", "", "", 0, nullptr, ann);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  m.subscribe("second", "c", "news", "", "", 0, nullptr, ann);  // its sweep ends a and b
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_THROW(m.poll("second", "", ann), fault);  // c ended, past the bound: not told
  EXPECT_EQ(m.snapshot().destinations.at(0).timed_out, 3u);
  EXPECT_EQ(m.snapshot().subscriptions, 0u);
  EXPECT_THROW(m.poll("first", "", bob), fault);  // another session's: not for it
  // A login moved ann's session to a new id: what "first" is to be told follows it.
  const caller ann_again{"session-ann-2", "10.0.0.1:1"};
  m.rebind("first", ann.session, ann_again.session);
  EXPECT_THROW(m.poll("first", "", ann), fault);
  const auto told = m.poll("first", "", ann_again);
  EXPECT_TRUE(told.messages.empty());
  std::vector<std::string> ids;
  for (const auto& e : told.invalidated) {
    ids.push_back(e.subscription);
    EXPECT_EQ(e.destination, "news");
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(m.poll("first", "", ann_again), fault);  // told once
}

TEST(MessagingState, APollParkedJustAfterAMessageCameReadsAgainAtOnce) {
  broker m(news_only());
  boost::asio::io_context io;
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  EXPECT_TRUE(m.poll("client", "", {}).messages.empty());
  auto w = m.park("client", {}, io.get_executor());  // nothing came: it waits
  ASSERT_TRUE(w);
  EXPECT_EQ(w->why, broker::wake::none);
  m.unpark(w);
  EXPECT_TRUE(m.poll("client", "", {}).messages.empty());
  m.publish("news", amf::value::number(1));  // after the poll, before the park
  w = m.park("client", {}, io.get_executor());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->why, broker::wake::message);
  m.unpark(w);
  EXPECT_EQ(m.poll("client", "", {}).messages.size(), 1u);
}

// A poll whose reply was not written gives its messages back; one that another poll read on
// from tells the next poll what was lost.
TEST(MessagingState, AReplyNotWrittenRewindsItsCursors) {
  broker m(news_only());
  boost::asio::io_context io;
  auto rewind = [&](const broker::batch& b) {
    boost::asio::co_spawn(io, m.rewind("client", b.cursors), boost::asio::detached);
    io.run();
    io.restart();
  };
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  m.publish("news", amf::value::number(1));
  m.publish("news", amf::value::number(2));
  const auto first = m.poll("client", "", {});
  ASSERT_EQ(first.messages.size(), 2u);
  rewind(first);
  const auto again = m.poll("client", "", {});
  EXPECT_EQ(again.messages.size(), 2u);  // read again, none lost
  EXPECT_TRUE(again.lost.empty());
  m.publish("news", amf::value::number(3));
  const auto third = m.poll("client", "", {});  // another poll read on since `again`
  rewind(again);
  EXPECT_EQ(third.messages.size(), 1u);
  const auto told = m.poll("client", "", {});
  EXPECT_TRUE(told.messages.empty());
  EXPECT_EQ(told.lost.at("sub"), 2u);
}

// A destination that conflates, with subtopics: "latest".
config::messaging_settings latest_only() {
  config::messaging_settings cfg;
  auto& d = cfg.destinations["latest"];
  d.allow_subtopics = true;
  d.throttle_outbound.policy = "conflate";
  return cfg;
}

std::uint64_t examined(const broker& m) {
  return m.snapshot().destinations.at(0).examined;
}

// The indexes in the log of what a batch delivers.
std::vector<std::uint64_t> indexes(const broker::batch& b) {
  std::vector<std::uint64_t> out;
  for (const auto& d : b.messages) out.push_back(d.message->index);
  return out;
}

// Under "conflate" a poll looked at everything that waited to find the newest of each
// subtopic, on every publish that woke it: held back by a frequency, with the retention's
// 1,000 waiting, each publish cost 1,000 steps under the broker's lock for each parked poll.
// Each message is now looked at about once for each subscription.
TEST(MessagingState, AConflatedPollHeldBackLooksAtEachMessageOnce) {
  broker m(latest_only());
  m.subscribe("client", "sub", "latest", "prices.*", "", 1, nullptr, {});  // 1 a second
  m.publish("latest", amf::value::number(-1), "prices.first");
  ASSERT_EQ(m.poll("client", "", {}).messages.size(), 1u);  // the second's token
  const std::uint64_t before = examined(m);
  constexpr int published = 400;
  std::size_t delivered = 0;
  for (int i = 0; i < published; ++i) {  // each of its own subtopic: none supersedes another
    m.publish("latest", amf::value::number(i), "prices." + std::to_string(i));
    const broker::batch b = m.poll("client", "", {});
    delivered += b.messages.size();  // (one a second, as tokens come)
    if (b.messages.empty()) {
      EXPECT_NE(b.due, std::chrono::steady_clock::time_point::max());
    }
  }
  // Once when it came, and once by each poll at the one held back: not 400 * 401 / 2.
  EXPECT_LE(examined(m) - before, 2u * published + delivered);
  EXPECT_EQ(m.snapshot().destinations.at(0).passed, 0u);
}

// The newest of each subtopic, across polls and after a rewind: what a poll found is kept
// for the next, and built again when the cursor moves back.
TEST(MessagingState, ConflationKeepsTheNewestOfEachSubtopicAcrossPollsAndRewinds) {
  broker m(latest_only());
  boost::asio::io_context io;
  m.subscribe("client", "sub", "latest", "prices.*", "", 0, nullptr, {});
  m.publish("latest", amf::value::number(0), "prices.a");
  m.publish("latest", amf::value::number(1), "prices.b");
  m.publish("latest", amf::value::number(2), "prices.a");
  const broker::batch first = m.poll("client", "", {});
  EXPECT_EQ(indexes(first), (std::vector<std::uint64_t>{1, 2}));
  boost::asio::co_spawn(io, m.rewind("client", first.cursors), boost::asio::detached);
  io.run();
  m.publish("latest", amf::value::number(3), "prices.b");
  EXPECT_EQ(indexes(m.poll("client", "", {})), (std::vector<std::uint64_t>{2, 3}));
  m.publish("latest", amf::value::number(4), "prices.b");
  m.publish("latest", amf::value::number(5), "prices.c");
  m.publish("latest", amf::value::number(6), "prices.b");
  EXPECT_EQ(indexes(m.poll("client", "", {})), (std::vector<std::uint64_t>{5, 6}));
  EXPECT_TRUE(m.poll("client", "", {}).messages.empty());
}

// What a conflating subscription keeps between polls names messages the log still holds:
// passed ones may leave it (retention) while the newest of their subtopic waits.
TEST(MessagingState, ConflationOutlivesWhatTheLogDrops) {
  config::messaging_settings cfg = latest_only();
  cfg.destinations["latest"].max_messages = 3;
  broker m(cfg);
  m.subscribe("client", "sub", "latest", "prices.*", "", 1, nullptr, {});  // 1 a second
  m.publish("latest", amf::value::number(0), "prices.x");
  ASSERT_EQ(indexes(m.poll("client", "", {})), std::vector<std::uint64_t>{0});  // its token
  m.publish("latest", amf::value::number(1), "prices.a");
  m.publish("latest", amf::value::number(2), "prices.a");
  const broker::batch held = m.poll("client", "", {});  // 1 passed, 2 held back (or due)
  m.publish("latest", amf::value::number(3), "prices.b");
  m.publish("latest", amf::value::number(4), "prices.c");  // 0 and 1 leave the log
  std::vector<std::uint64_t> got = indexes(held);
  for (int polls = 0; got.size() < 3 && polls < 50; ++polls) {
    const broker::batch b = m.poll("client", "", {});
    for (auto i : indexes(b)) got.push_back(i);
    if (b.messages.empty()) {
      ASSERT_NE(b.due, std::chrono::steady_clock::time_point::max()) << "nothing held back";
      std::this_thread::sleep_until(b.due);
    }
  }
  EXPECT_EQ(got, (std::vector<std::uint64_t>{2, 3, 4}));
  EXPECT_TRUE(m.poll("client", "", {}).lost.empty());
}

// A batch holds at most the bytes a reply may carry; a message larger than that alone is lost.
TEST(MessagingState, ABatchHoldsWhatAReplyMayCarry) {
  broker m(news_only());
  amf::document doc;
  m.subscribe("client", "sub", "news", "", "", 0, nullptr, {});
  for (int i = 0; i < 10; ++i) m.publish("news", doc.string(std::string(1000, 'a')));
  m.publish("news", doc.string(std::string(100'000, 'b')));
  const auto b = m.poll("client", "", {}, 5000);
  EXPECT_EQ(b.messages.size(), 3u);  // about 1.3 KB each as kept
  EXPECT_TRUE(b.lost.empty());
  const auto rest = m.poll("client", "", {}, 5000);
  EXPECT_EQ(rest.messages.size(), 3u);
  m.poll("client", "", {}, 5000);
  const auto last = m.poll("client", "", {}, 5000);
  EXPECT_EQ(last.messages.size(), 1u);
  EXPECT_EQ(last.lost.at("sub"), 1u);  // the 100 KB one
}

// Cut by bytes across two subscriptions (ids too long for a short string): the messages left
// out wait, and the cursors stop at them (fuzz_gateway found their ids read after they went).
TEST(MessagingState, MessagesLeftOutOfABatchWaitForTheNext) {
  broker m(news_only());
  amf::document doc;
  const std::string a = "subscription-" + std::string(40, 'a');
  const std::string b = "subscription-" + std::string(40, 'b');
  m.subscribe("client", a, "news", "", "", 0, nullptr, {});
  m.subscribe("client", b, "news", "", "", 0, nullptr, {});
  for (int i = 0; i < 6; ++i) m.publish("news", doc.string(std::string(1000, 'x')));
  std::size_t delivered = 0;
  for (int polls = 0; polls < 10; ++polls) {
    const auto batch = m.poll("client", "", {}, 5000);
    EXPECT_LE(batch.messages.size(), 3u);
    EXPECT_TRUE(batch.lost.empty());
    delivered += batch.messages.size();
  }
  EXPECT_EQ(delivered, 12u);  // each message once for each subscription
}

}  // namespace
}  // namespace amfgate::messaging
