// Resuming a subscription against a live daemon (messaging.resume_window_ms): a Consumer
// whose FlexClient timed out, disconnected, or unsubscribed with DSPreserveDurable
// resubscribes with its clientId, as the Flex SDK does after Server.Processing.NotSubscribed,
// and gets what was published while it was away, in order, none twice. Only its own
// FlexClient may.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "daemon.hpp"
#include "flex_messaging.hpp"

namespace amfgate::test {
namespace {

using op = amf::flex::operation;

class Resume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = std::make_unique<daemon>(
        R"("messaging": {"client_idle_timeout_ms": 1500, "resume_window_ms": 60000,
           "destinations": {"news": {}, "other": {}}})");
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::uint16_t port() { return shared->port(); }
  static double resumed() {
    return shared->metric("amfgate_messaging_resumed_total{destination=\"news\"}");
  }

  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Resume::shared;

TEST_F(Resume, AConsumerWhoseFlexClientTimedOutGetsWhatCameWhileItWasAway) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer = subscribed(reader, "news");
  flex_producer producer{writer, "news"};
  ASSERT_EQ(fault_text(producer.send("one")), "");
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"one"});
  ASSERT_EQ(fault_text(producer.send("two")), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // past client_idle_timeout
  // Its next poll finds it timed out (the Flex SDK then resubscribes).
  const std::string gone = fault_text(consumer.receive());
  EXPECT_EQ(gone.rfind("Server.Processing.NotSubscribed", 0), 0u) << gone;
  ASSERT_EQ(fault_text(producer.send("three")), "");

  // Another FlexClient with its clientId is refused, and takes nothing.
  flex_channel intruder = connected(port());
  flex_consumer stolen{intruder, "news", "", "", consumer.client_id};
  const std::string refused = fault_text(stolen.subscribe());
  EXPECT_NE(refused.find("is in use by another FlexClient (10559)"), std::string::npos) << refused;

  const std::string id = consumer.client_id;
  const double before = resumed();
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  EXPECT_EQ(consumer.client_id, id);
  EXPECT_EQ(texts(consumer.receive()), (std::vector<std::string>{"two", "three"}));
  EXPECT_TRUE(consumer.receive().messages().empty());  // none twice
  EXPECT_EQ(resumed() - before, 1);

  // A clientId the daemon never kept (made up, or lost in a restart): a subscription from now.
  flex_consumer fresh{reader, "news", "", "", amf::flex::new_uuid()};
  ASSERT_EQ(fault_text(fresh.subscribe()), "");
  ASSERT_EQ(fault_text(producer.send("four")), "");
  EXPECT_EQ(texts(fresh.receive()), std::vector<std::string>{"four"});
  EXPECT_EQ(resumed() - before, 1);
}

TEST_F(Resume, ADisconnectOrADurableUnsubscribeKeepsTheCursor) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer = subscribed(reader, "news");
  flex_producer producer{writer, "news"};
  ASSERT_EQ(fault_text(producer.send("a")), "");
  // ChannelSet.disconnect(): the channel goes, and its subscriptions with it, kept.
  amf::document doc;
  amf::flex::message bye = reader.message(doc, amf::flex::kind::command);
  bye.command = static_cast<std::int32_t>(op::disconnect);
  ASSERT_FALSE(reader.exchange({amf::flex::make(doc, bye)}).at(0).is_fault());
  EXPECT_EQ(fault_text(consumer.receive()).rfind("Server.Processing.NotSubscribed", 0), 0u);
  ASSERT_EQ(fault_text(producer.send("b")), "");
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  EXPECT_EQ(texts(consumer.receive()), (std::vector<std::string>{"a", "b"}));

  // Consumer.unsubscribe(true): DSPreserveDurable.
  ASSERT_EQ(fault_text(consumer.command(op::unsubscribe,
                                        {{"DSPreserveDurable", amf::value::boolean(true)}})),
            "");
  ASSERT_EQ(fault_text(producer.send("c")), "");
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"c"});

  // A plain unsubscribe ends it: the same clientId again is a subscription from now.
  ASSERT_EQ(fault_text(consumer.unsubscribe()), "");
  ASSERT_EQ(fault_text(producer.send("d")), "");
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  EXPECT_TRUE(consumer.receive().messages().empty());

  // Kept for its own destination: resubscribing it elsewhere is refused.
  ASSERT_FALSE(consumer.command(op::unsubscribe, {{"DSPreserveDurable", amf::value::boolean(true)}})
                   .is_fault());
  flex_consumer elsewhere{reader, "other", "", "", consumer.client_id};
  EXPECT_NE(fault_text(elsewhere.subscribe()).find("subscribes to destination \"news\""),
            std::string::npos);
}

}  // namespace
}  // namespace amfgate::test
