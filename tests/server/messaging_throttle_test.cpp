// Throttling against a live daemon: what Producers may send (throttle_inbound) and what
// Consumers receive (throttle_outbound, the Consumer's maxFrequency), as BlazeDS and LCDS
// configured them. Rates are asserted as counts against the time that passed, never as time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "daemon.hpp"
#include "flex_messaging.hpp"

namespace amfgate::test {
namespace {

using op = amf::flex::operation;
using clock = std::chrono::steady_clock;

class Throttling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = std::make_unique<daemon>(
        R"("messaging": {"poll_wait_ms": 1500, "client_wait_ms": 0, "stream_heartbeat_ms": 300,
           "destinations": {
             "limited": {"throttle_inbound": {"max_frequency": 10}},
             "quiet": {"throttle_inbound": {"max_client_frequency": 5, "policy": "ignore"}},
             "paced": {},
             "latest": {"allow_subtopics": true, "throttle_outbound": {"policy": "conflate"}},
             "lossy": {"throttle_outbound": {"max_client_frequency": 3, "policy": "ignore"}}}})");
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::uint16_t port() { return shared->port(); }

  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Throttling::shared;

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

// The numbers a reply's messages carry.
std::vector<int> numbers(const flex_reply& r) {
  std::vector<int> out;
  for (const auto& m : r.messages()) out.push_back(static_cast<int>(m.body.to_double()));
  return out;
}

// `n` messages numbered from 0, sent to `destination` in one request.
void send_numbered(flex_channel& writer, const std::string& destination, int n) {
  flex_producer producer{writer, destination};
  amf::document doc;
  std::vector<amf::value> all;
  for (int i = 0; i < n; ++i) all.push_back(producer.async_message(doc, amf::value::integer(i)));
  for (const auto& r : writer.exchange(all)) ASSERT_FALSE(r.is_fault()) << fault_text(r);
}

// The series `name` of destination `dest` in the /metrics of `d`.
double metric(const daemon& d, std::string_view name, std::string_view dest) {
  return d.metric(std::string(name) + "{destination=\"" + std::string(dest) + "\"}");
}

// Messages a second past a token bucket of `rate` that starts full: at most this many in
// `seconds`.
double at_most(double rate, double seconds) {
  return rate + rate * seconds + 1;
}

TEST_F(Throttling, AProducerFloodingADestinationPastItsFrequencyGetsFaults) {
  flex_channel writer = connected(port());
  flex_producer producer{writer, "limited"};
  amf::document doc;
  std::vector<amf::value> flood;
  for (int i = 0; i < 200; ++i) flood.push_back(producer.async_message(doc, amf::value::number(i)));
  const auto started = std::chrono::steady_clock::now();
  const auto replies = writer.exchange(flood);  // 200 in one request: far past 10 a second
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(replies.size(), flood.size());
  int accepted = 0, faulted = 0;
  for (const auto& r : replies) {
    if (!r.is_fault()) {
      ++accepted;
      continue;
    }
    ++faulted;
    EXPECT_EQ(r.m.fault_code, "Server.Processing");
    EXPECT_NE(r.m.fault_string.find("throttled: too many messages sent to destination"),
              std::string_view::npos)
        << r.m.fault_string;
  }
  EXPECT_GE(accepted, 10);  // the first second's worth
  EXPECT_LE(accepted, at_most(10, seconds));
  EXPECT_EQ(faulted, 200 - accepted);
  EXPECT_EQ(metric(*shared, "amfgate_messaging_throttled_total", "limited"), faulted);
  EXPECT_EQ(metric(*shared, "amfgate_messaging_published_total", "limited"), accepted);
  EXPECT_EQ(shared->client().get("/healthz").status, 200);
}

TEST_F(Throttling, UnderIgnoreAFloodingProducerIsAcknowledgedAndDroppedAndOthersStillSend) {
  flex_channel reader = connected(port()), flooder = connected(port()), other = connected(port());
  flex_consumer consumer{reader, "quiet"};
  ASSERT_FALSE(consumer.subscribe().is_fault());
  flex_producer loud{flooder, "quiet"}, calm{other, "quiet"};
  amf::document doc;
  std::vector<amf::value> flood;
  for (int i = 0; i < 50; ++i) flood.push_back(loud.async_message(doc, doc.string("loud")));
  const auto started = std::chrono::steady_clock::now();
  for (const auto& r : flooder.exchange(flood)) EXPECT_FALSE(r.is_fault());  // acknowledged
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(calm.send("calm").is_fault());  // another FlexClient has its own bound
  const auto got = texts(consumer.receive());
  const auto loud_kept = std::count(got.begin(), got.end(), "loud");
  EXPECT_GE(loud_kept, 5);
  EXPECT_LE(loud_kept, at_most(5, seconds));
  EXPECT_EQ(std::count(got.begin(), got.end(), "calm"), 1);
  EXPECT_EQ(metric(*shared, "amfgate_messaging_throttled_total", "quiet"), 50 - loud_kept);
}

TEST_F(Throttling, AConsumerWithMaxFrequencyGetsAtMostThatManyASecondAllInOrder) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "paced"};
  consumer.max_frequency = 5;
  const auto started = clock::now();  // its bucket starts full at the subscribe
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  send_numbered(writer, "paced", 30);
  // Long polls: the first takes a second's worth; the rest wait in the log, and a parked
  // poll returns as each comes due, without another publish to wake it.
  std::vector<int> got;
  const auto first = numbers(reader.poll());
  got.insert(got.end(), first.begin(), first.end());
  while (got.size() < 12 && seconds_since(started) < 30) {
    const auto more = numbers(reader.poll());
    got.insert(got.end(), more.begin(), more.end());
  }
  const double seconds = seconds_since(started);
  EXPECT_GE(first.size(), 5u);
  EXPECT_LE(static_cast<double>(got.size()), at_most(5, seconds));
  ASSERT_GE(got.size(), 12u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int>(i));  // none lost
  EXPECT_EQ(metric(*shared, "amfgate_messaging_passed_total", "paced"), 0);
}

TEST_F(Throttling, AStreamHoldsBackPastMaxFrequencyAndSendsItWhenDue) {
  flex_channel channel = connected(port()), writer = connected(port());
  flex_stream stream(port(), channel.dsid);
  ASSERT_EQ(stream.status, 200u) << stream.head;
  amf::document doc;
  ASSERT_TRUE(stream.next(doc));  // "connected"
  flex_consumer consumer{channel, "paced"};
  consumer.max_frequency = 4;
  const auto started = clock::now();
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  send_numbered(writer, "paced", 12);
  std::vector<int> got;
  while (got.size() < 8) {
    const auto m = stream.next(doc, 5000);
    ASSERT_TRUE(m) << "after " << got.size();
    got.push_back(static_cast<int>(m->body.to_double()));
  }
  EXPECT_LE(static_cast<double>(got.size()), at_most(4, seconds_since(started)));
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int>(i));
}

TEST_F(Throttling, ConflateDeliversTheNewestMessageOfEachSubtopic) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "latest", "prices.*"};
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  const double before = metric(*shared, "amfgate_messaging_passed_total", "latest");
  for (const char* tick : {"a1", "b1", "a2", "b2", "a3"}) {
    flex_producer p{writer, "latest", std::string("prices.") + tick[0]};
    ASSERT_EQ(fault_text(p.send(tick)), "");
  }
  EXPECT_EQ(texts(consumer.receive()), (std::vector<std::string>{"b2", "a3"}));
  EXPECT_EQ(metric(*shared, "amfgate_messaging_passed_total", "latest") - before, 3);
  // One at a time, each is the newest.
  flex_producer p{writer, "latest", "prices.b"};
  ASSERT_EQ(fault_text(p.send("b3")), "");
  EXPECT_EQ(texts(consumer.receive()), std::vector<std::string>{"b3"});
}

TEST_F(Throttling, UnderIgnoreWhatIsPastTheFrequencyIsPassedAndCounted) {
  flex_channel reader = connected(port()), writer = connected(port());
  flex_consumer consumer{reader, "lossy"};
  const auto started = clock::now();
  ASSERT_EQ(fault_text(consumer.subscribe()), "");
  send_numbered(writer, "lossy", 20);
  const auto got = numbers(consumer.receive());
  const double seconds = seconds_since(started);
  EXPECT_GE(got.size(), 3u);
  EXPECT_LE(static_cast<double>(got.size()), at_most(3, seconds));
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<int>(i));
  EXPECT_TRUE(consumer.receive().messages().empty());  // the rest was passed, not kept
  EXPECT_EQ(metric(*shared, "amfgate_messaging_passed_total", "lossy"),
            20 - static_cast<double>(got.size()));
}

TEST_F(Throttling, AMaxFrequencyOutOfRangeIsAFaultAndNothingIsKept) {
  flex_channel reader = connected(port());
  const double subscriptions = metric(*shared, "amfgate_messaging_subscriptions", "paced");
  const std::string refused = "Server.Processing: maxFrequency ";
  for (const double f : {0.0, 1e9, -1.0, 2.5, 1001.0, std::numeric_limits<double>::quiet_NaN()}) {
    flex_consumer consumer{reader, "paced"};
    consumer.max_frequency = f;
    const std::string fault = fault_text(consumer.subscribe());
    EXPECT_EQ(fault.rfind(refused, 0), 0u) << f << ": " << fault;
    EXPECT_NE(fault.find("a Consumer may ask for 1 to 1000 messages a second"), std::string::npos);
  }
  // Of another type, and as a MULTI_SUBSCRIBE entry's third field.
  amf::document doc;
  flex_consumer typed{reader, "paced"};
  EXPECT_EQ(fault_text(typed.command(op::subscribe, {{"DSMaxFrequency", doc.string("fast")}})),
            refused +
                "(not a number) refused: a Consumer may ask for 1 to 1000 messages a "
                "second (or leave it out for no bound)");
  for (const char* e : {"_;__;_0", "_;__;_fast", "_;__;_99999999999", "_;__;_5x"}) {
    flex_consumer multi{reader, "paced", "", "", amf::flex::new_uuid()};
    amf::array_node* add = doc.array();
    add->dense.push_back(doc.string(e));
    const std::string fault =
        fault_text(multi.command(op::multi_subscribe, {{"DSAddSub", amf::value::of(add)}}));
    EXPECT_EQ(fault.rfind(refused, 0), 0u) << e << ": " << fault;
  }
  EXPECT_EQ(metric(*shared, "amfgate_messaging_subscriptions", "paced"), subscriptions);
  EXPECT_EQ(shared->client().get("/healthz").status, 200);
}

}  // namespace
}  // namespace amfgate::test
