#include "amfgate/services/messaging.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "amf/flex.hpp"

namespace amfgate::services {
namespace {

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

TEST(MessagingState, NothingIsKeptForAFlexClientWithoutSubscriptionsOrConnections) {
  config::messaging_settings cfg;
  cfg.destinations["news"];
  messaging m(cfg);
  boost::asio::io_context io;
  // Streams opened and closed with made-up DSIds.
  for (int i = 0; i < 100; ++i) {
    auto w = m.open_stream(amf::flex::new_uuid(), {}, io.get_executor());
    m.unpark(w);
  }
  // Subscribe and unsubscribe rounds.
  for (int i = 0; i < 100; ++i) {
    const std::string client = amf::flex::new_uuid(), id = amf::flex::new_uuid();
    m.subscribe(client, id, "news", "", "", nullptr, {});
    m.unsubscribe(client, id, "", "", {});
  }
  auto s = m.snapshot();
  EXPECT_EQ(s.clients, 0u);
  EXPECT_EQ(s.subscriptions, 0u);
  EXPECT_EQ(s.streams, 0u);
  // One that subscribes is kept, and its parked poll is counted until it returns.
  m.subscribe("client", "sub", "news", "", "", nullptr, {});
  auto w = m.park("client", {}, io.get_executor());
  ASSERT_TRUE(w);
  EXPECT_EQ(m.snapshot().parked, 1u);
  m.publish("news", amf::value::number(1));
  EXPECT_EQ(w->why, messaging::wake::message);
  m.unpark(w);
  s = m.snapshot();
  EXPECT_EQ(s.clients, 1u);
  EXPECT_EQ(s.parked, 0u);
  EXPECT_EQ(m.poll("client", "", {}).messages.size(), 1u);
}

TEST(MessagingState, APollParkedJustAfterAMessageCameReadsAgainAtOnce) {
  config::messaging_settings cfg;
  cfg.destinations["news"];
  messaging m(cfg);
  boost::asio::io_context io;
  m.subscribe("client", "sub", "news", "", "", nullptr, {});
  EXPECT_TRUE(m.poll("client", "", {}).messages.empty());
  auto w = m.park("client", {}, io.get_executor());  // nothing came: it waits
  ASSERT_TRUE(w);
  EXPECT_EQ(w->why, messaging::wake::none);
  m.unpark(w);
  EXPECT_TRUE(m.poll("client", "", {}).messages.empty());
  m.publish("news", amf::value::number(1));  // after the poll, before the park
  w = m.park("client", {}, io.get_executor());
  ASSERT_TRUE(w);
  EXPECT_EQ(w->why, messaging::wake::message);
  m.unpark(w);
  EXPECT_EQ(m.poll("client", "", {}).messages.size(), 1u);
}

}  // namespace
}  // namespace amfgate::services
