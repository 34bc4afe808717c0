// Timeouts against a live daemon: a subscription that nothing was delivered to for its
// destination's subscription_timeout_ms, and a FlexClient idle past client_idle_timeout_ms,
// end, and a Consumer that is still there is told with a SUBSCRIPTION_INVALIDATE command
// (operation 10), as BlazeDS told it: on a parked poll, a stream, or its next poll.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

#include "daemon.hpp"
#include "flex_messaging.hpp"

namespace amfgate::test {
namespace {

using op = amf::flex::operation;
using clock = std::chrono::steady_clock;

class Timeouts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = std::make_unique<daemon>(
        R"("messaging": {"poll_wait_ms": 5000, "client_wait_ms": 0, "stream_heartbeat_ms": 300,
           "client_idle_timeout_ms": 2000,
           "destinations": {"brief": {"subscription_timeout_ms": 1500}, "news": {}}})");
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::uint16_t port() { return shared->port(); }
  static double timed_out() {
    return shared->metric("amfgate_messaging_timed_out_total{destination=\"brief\"}");
  }

  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Timeouts::shared;

// The SUBSCRIPTION_INVALIDATE commands among `messages`.
std::vector<amf::flex::message> invalidations(const std::vector<amf::flex::message>& messages) {
  std::vector<amf::flex::message> out;
  std::copy_if(messages.begin(), messages.end(), std::back_inserter(out), [](const auto& m) {
    return m.kind == amf::flex::kind::command &&
           m.command == static_cast<std::int32_t>(op::subscription_invalidate);
  });
  return out;
}

// Polls (each parks up to poll_wait) until one brings a SUBSCRIPTION_INVALIDATE, at most 4:
// that reply (its messages live in it).
flex_reply polled_until_told(flex_channel& c) {
  flex_reply r;
  for (int i = 0; i < 4; ++i) {
    r = c.poll();
    EXPECT_FALSE(r.is_fault()) << fault_text(r);
    if (!invalidations(r.messages()).empty()) break;
  }
  return r;
}

TEST_F(Timeouts, AParkedPollIsToldItsIdleSubscriptionTimedOut) {
  flex_channel reader = connected(port());
  flex_consumer consumer = subscribed(reader, "brief");
  const double before = timed_out();
  const flex_reply r = polled_until_told(reader);
  const auto told = invalidations(r.messages());
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].client_id.as_string(), consumer.client_id);  // the SDK routes it by this
  EXPECT_EQ(told[0].destination, "brief");
  EXPECT_EQ(told[0].message_id.size(), 36u);
  EXPECT_GT(told[0].timestamp, 0);
  EXPECT_EQ(timed_out() - before, 1);
  // It is gone: Consumer.receive() finds it so, and it is told once.
  const std::string gone = fault_text(consumer.receive());
  EXPECT_EQ(gone.rfind("Server.Processing.NotSubscribed", 0), 0u) << gone;
  EXPECT_EQ(fault_text(reader.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
  // Subscribing again starts it anew (the SDK's Consumer.subscribe() after the notice).
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  flex_channel writer = connected(port());
  flex_producer producer{writer, "brief"};
  ASSERT_EQ(fault_text(producer.send("again")), "");
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"again"});
}

TEST_F(Timeouts, AStreamIsToldItsIdleSubscriptionTimedOut) {
  flex_channel channel = connected(port());
  flex_stream stream(port(), channel.dsid);
  ASSERT_EQ(stream.status, 200u) << stream.head;
  amf::document doc;
  const auto open = stream.next(doc);
  ASSERT_TRUE(open);
  ASSERT_EQ(open->correlation_id, "open");
  flex_consumer consumer = subscribed(channel, "brief");
  // Only heartbeats until the timeout ends it (within twice its time: the sweep's period).
  std::optional<amf::flex::message> told;
  for (int i = 0; i < 4 && !told; ++i) told = stream.next(doc, 2000);
  ASSERT_TRUE(told);
  EXPECT_EQ(told->kind, amf::flex::kind::command);
  EXPECT_EQ(told->command, static_cast<std::int32_t>(op::subscription_invalidate));
  EXPECT_EQ(told->client_id.as_string(), consumer.client_id);
  EXPECT_EQ(told->destination, "brief");
  EXPECT_FALSE(stream.ended);  // the stream stays, for the Consumer's next subscribe
}

TEST_F(Timeouts, ASubscriptionThatMessagesReachDoesNotTimeOut) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer = subscribed(reader, "brief");
  flex_producer producer{writer, "brief"};
  // A message every 250 ms or so, read at once: each delivery starts its timeout anew.
  auto last = clock::now();
  clock::duration widest{};
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(fault_text(producer.send(std::to_string(i))), "");
    const flex_reply r = consumer.receive();
    ASSERT_EQ(fault_text(r), "");
    EXPECT_TRUE(invalidations(r.messages()).empty());
    const auto now = clock::now();
    widest = std::max(widest, now - last);
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  // What this asserts holds only if the machine kept the deliveries closer than the timeout.
  if (widest < std::chrono::milliseconds(1000)) {
    EXPECT_EQ(fault_text(consumer.receive()), "");
  }
}

TEST_F(Timeouts, AFlexClientThatCameBackAfterItsIdleTimeoutIsToldOnItsNextPoll) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer news = subscribed(reader, "news");
  flex_consumer brief = subscribed(reader, "brief");
  // Past client_idle_timeout_ms (2 s), and the sweep's period after it.
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  ASSERT_EQ(shared->metric("amfgate_messaging_subscriptions{destination=\"news\"}"), 0);
  const flex_reply r = reader.poll();
  ASSERT_EQ(fault_text(r), "");
  auto told = invalidations(r.messages());
  ASSERT_EQ(told.size(), 2u);
  std::vector<std::string> ids;
  for (const auto& m : told) ids.emplace_back(m.client_id.as_string());
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> expected{news.client_id, brief.client_id};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(ids, expected);
  // Told once; after that the FlexClient has nothing.
  EXPECT_EQ(fault_text(reader.poll()).rfind("Server.Processing.NotSubscribed", 0), 0u);
  // Another FlexClient's poll is not told of them.
  flex_consumer other = subscribed(writer, "news");
  EXPECT_TRUE(invalidations(other.receive().messages()).empty());
}

}  // namespace
}  // namespace amfgate::test
