// How calls run, against a live daemon of the tests' own (test_daemon.cpp): handlers that
// block run on the worker pool and never hold up an I/O thread; coroutines wait without a
// thread; deadlines, hang-ups, a full queue; logins on the pool, limited and evenly timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <thread>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/services/auth.hpp"
#include "daemon.hpp"
#include "raw_socket.hpp"

namespace amfgate::test {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using std::chrono::milliseconds;

// One NetConnection call; the reply's first body.
struct answer {
  unsigned status = 0;
  std::string retry_after;
  std::string target;  // "/1/onResult" or "/1/onStatus"
  double number = 0;
  std::string code, description;  // of a fault
};

answer call(client::http_client& http, std::string_view target, std::vector<amf::value> args,
            std::string_view user = {}, std::string_view password = {}) {
  const auto res =
      http.post("/gateway", client::netconnection_request(target, args, false, user, password));
  answer a;
  a.status = res.status;
  a.retry_after = res.header("Retry-After");
  if (res.status != 200) return a;
  amf::document doc;
  const auto p = amf::decode_packet(amf::as_bytes(res.body), doc);
  const auto& v = p.bodies.at(0).val;
  a.target = p.bodies.at(0).target;
  if (v.is_numeric()) a.number = v.to_double();
  if (auto* o = v.as_object()) {
    if (auto* c = o->find("code")) a.code = c->as_string();
    if (auto* d = o->find("description")) a.description = d->as_string();
  }
  return a;
}

answer call(const daemon& d, std::string_view target, std::vector<amf::value> args) {
  auto http = d.client();
  return call(http, target, std::move(args));
}

std::vector<double> counters(const daemon& d) {  // started, finished, cancelled, late, peak
  auto http = d.client();
  const auto res = http.post("/gateway", client::netconnection_request("Slow.counters", {}, false));
  amf::document doc;
  const auto p = amf::decode_packet(amf::as_bytes(res.body), doc);
  std::vector<double> out;
  for (const auto& v : p.bodies.at(0).val.as_array()->dense) out.push_back(v.to_double());
  return out;
}

// Echo calls on a connection of their own: how many of `n` were answered 200.
int echo_calls(const daemon& d, int n) {
  auto http = d.client();
  amf::document doc;
  const auto body = client::netconnection_request("echo", std::vector{doc.string("hi")}, false);
  int answered = 0;
  for (int i = 0; i < n; ++i) answered += http.post("/gateway", body).status == 200;
  return answered;
}

class Execution : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    d_ = new daemon(
        "\"workers\": {\"threads\": 32, \"max_queue\": 8}, \"log\": {\"level\": \"info\"}, "
        // One address makes a thousand calls at once here: no limit per client.
        "\"limits\": {\"max_connections_per_client\": 0, \"max_requests_per_client\": 0, "
        "\"call_timeouts\": {\"Slow.wait\": 1000, \"Slow.block\": 2500, "
        "\"Slow.hold\": 0, "
        "\"Upstream\": 2000}}",
        AMFGATE_TEST_DAEMON);
  }
  static void TearDownTestSuite() { delete d_; }
  void SetUp() override { call(*d_, "Slow.reset", {}); }
  static daemon* d_;
};
daemon* Execution::d_ = nullptr;

TEST_F(Execution, TheThreeFormsAnswer) {
  auto http = d_->client();
  amf::document doc;
  // inline: a computation; pool: SQLite; coroutine: an HTTP call (to this daemon's /healthz).
  const auto fib = http.post(
      "/gateway",
      client::netconnection_request("Math.fibonacci", std::vector{amf::value::integer(10)}, false));
  auto p = amf::decode_packet(amf::as_bytes(fib.body), doc);
  ASSERT_EQ(p.bodies.at(0).target, "/1/onResult");
  EXPECT_EQ(p.bodies[0].val.as_array()->dense.at(9).to_double(), 34.0);
  EXPECT_EQ(call(http, "Inventory.add", {doc.string("lamp"), amf::value::integer(3)}).number, 3);
  EXPECT_EQ(call(http, "Inventory.add", {doc.string("lamp"), amf::value::integer(4)}).number, 7);
  EXPECT_EQ(call(http, "Inventory.count", {doc.string("lamp")}).number, 7);
  const auto up = http.post(
      "/gateway", client::netconnection_request(
                      "Upstream.get",
                      std::vector{doc.string("127.0.0.1"), doc.string(std::to_string(d_->port())),
                                  doc.string("/healthz")},
                      false));
  p = amf::decode_packet(amf::as_bytes(up.body), doc);
  ASSERT_EQ(p.bodies.at(0).target, "/1/onResult");
  EXPECT_EQ(p.bodies[0].val.as_string(), "ok\n");
}

// 32 handlers hold their workers (until released) while 8 more wait: echo on other
// connections stays fast, and one more call is refused at once with 503 and Retry-After.
TEST_F(Execution, BlockingHandlersHoldNoIoThreadAndAFullQueueIs503) {
  std::vector<std::future<answer>> held;
  for (int i = 0; i < 40; ++i) {
    held.push_back(std::async(std::launch::async, [] { return call(*d_, "Slow.hold", {}); }));
  }
  ASSERT_TRUE(d_->metric_reaches("amfgate_workers_busy", 32));
  ASSERT_TRUE(d_->metric_reaches("amfgate_worker_queue_depth", 8));
  const auto refused = call(*d_, "Slow.hold", {});
  EXPECT_EQ(refused.status, 503u);
  EXPECT_EQ(refused.retry_after, "1");
  // Echo is answered on other connections while every worker is held: no I/O thread waits.
  const int echoed = echo_calls(*d_, 20);
  EXPECT_EQ(echoed, 20);
  EXPECT_EQ(d_->metric("amfgate_workers_busy"), 32);  // held all along
  call(*d_, "Slow.release", {});                      // the 32, then the 8 behind them
  std::this_thread::sleep_for(milliseconds(200));
  call(*d_, "Slow.release", {});
  for (auto& f : held) EXPECT_EQ(f.get().target, "/1/onResult");
  EXPECT_GE(d_->metric("amfgate_busy_refusals_total"), 1);
}

// 1,000 concurrent calls of a coroutine that awaits a 100 ms timer, on 2 I/O threads.
TEST_F(Execution, CoroutinesWaitWithoutThreads) {
  const std::string body =
      client::netconnection_request("Slow.wait", std::vector{amf::value::integer(900)}, false);
  net::io_context io;
  const auto endpoint = net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), d_->port());
  int answered = 0;
  auto one = [&]() -> net::awaitable<void> {
    boost::beast::tcp_stream s(io);
    co_await s.async_connect(endpoint, net::use_awaitable);
    http::request<http::string_body> req(http::verb::post, "/gateway", 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/x-amf");
    req.body() = body;
    req.prepare_payload();
    co_await http::async_write(s, req, net::use_awaitable);
    boost::beast::flat_buffer b;
    http::response<http::string_body> res;
    co_await http::async_read(s, b, res, net::use_awaitable);
    if (res.result_int() == 200 && res.body().find("onResult") != std::string::npos) ++answered;
  };
  for (int i = 0; i < 1000; ++i) net::co_spawn(io, one(), net::detached);
  io.run();
  EXPECT_EQ(answered, 1000);
  const auto c = counters(*d_);
  EXPECT_EQ(c.at(0), 1000);
  EXPECT_EQ(c.at(1), 1000);
  // Waits of 900 ms each (the fixture's deadline is 1 s) overlapped far beyond the worker pool's
  // few threads (and the two I/O threads): they held no thread. Counted, not timed, so a busy
  // machine cannot fail it.
  EXPECT_GE(c.at(4), 100);
}

TEST_F(Execution, DeadlinesAnswerServerTimeoutForBothKinds) {
  const double before = d_->metric("amfgate_call_timeouts_total");
  struct {
    const char* target;
    int timeout_ms;
  } const calls[] = {{"Slow.wait", 1000}, {"Slow.block", 2500}};
  for (const auto& c : calls) {
    const auto a = call(*d_, c.target, {amf::value::integer(2 * c.timeout_ms)});
    EXPECT_EQ(a.target, "/1/onStatus") << c.target;
    EXPECT_EQ(a.code, "Server.Timeout");
    EXPECT_EQ(a.description, std::string(c.target) + " did not answer within " +
                                 std::to_string(c.timeout_ms) + " ms");
    // The deadline answered (its fault, counted below), while the handler still ran: each
    // would run twice its deadline, and nothing has finished, whatever the machine's speed.
    EXPECT_EQ(counters(*d_).at(1), 0) << c.target;
  }
  EXPECT_EQ(d_->metric("amfgate_call_timeouts_total"), before + 2);
  const auto c = counters(*d_);
  EXPECT_EQ(c.at(2), 1);  // the coroutine saw its cancellation
  // The blocking one finishes later on its worker; its result is dropped and logged.
  EXPECT_TRUE(d_->logged("Slow.block from 127.0.0.1", std::chrono::seconds(3)));
  EXPECT_TRUE(d_->logged("finished after its caller stopped waiting: result dropped"));
  EXPECT_EQ(counters(*d_).at(3), 1);  // and it could see that nobody waited (ctx.abandoned())
}

TEST_F(Execution, AClientThatHangsUpCancelsItsCall) {
  const double before = d_->metric("amfgate_calls_abandoned_total");
  for (const char* target : {"Slow.wait", "Slow.block"}) {
    const auto body =
        client::netconnection_request(target, std::vector{amf::value::integer(900)}, false);
    // Sends the call, waits 200 ms for an answer that does not come, and closes.
    raw_socket s(d_->port());
    s.send(
        "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_TRUE(d_->metric_reaches("amfgate_calls_abandoned_total", before + 2));
  EXPECT_EQ(counters(*d_).at(2), 1);  // the coroutine was cancelled, long before its 2 s
  EXPECT_TRUE(d_->logged("Slow.wait from 127.0.0.1"));
}

// Logins: the hash runs on the pool, failures are limited, and a refusal costs the same
// whether the user exists or not.
class Logins : public ::testing::Test {
 protected:
  static std::string settings(std::size_t max_failures, int backoff_ms) {
    static const std::string hash = services::hash_password("ann-secret");
    return "\"users\": [{\"name\": \"ann\", \"password\": \"" + hash +
           "\", \"roles\": []}], \"access\": {\"Slow.counters\": {}}, \"logins\": "
           "{\"max_failures\": " +
           std::to_string(max_failures) + ", \"backoff_ms\": " + std::to_string(backoff_ms) + "}";
  }
};

TEST_F(Logins, AFloodOfWrongPasswordsLeavesEchoAnswered) {
  daemon d(settings(1000, 1000), AMFGATE_TEST_DAEMON);
  std::atomic<bool> flooding{true};
  std::vector<std::thread> flood;
  std::atomic<int> refused{0};
  for (int i = 0; i < 50; ++i) {
    flood.emplace_back([&] {
      auto http = d.client();
      try {
        while (flooding) {
          if (call(http, "Slow.counters", {}, "ann", "wrong").code == "Client.Authentication") {
            ++refused;
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << "\n" << d.log().substr(0, 6000);
        flooding = false;
      }
    });
  }
  // The hashes run on the worker pool: while every worker hashes, inline echo calls are
  // answered all the same. (Counted, not timed: with the hashes on the I/O threads the pool
  // stays idle, and the count of echoes answered beside a busy pool stays 0.)
  auto http = d.client();
  amf::document doc;
  const auto body = client::netconnection_request("echo", std::vector{doc.string("hi")}, false);
  const double workers = d.metric("amfgate_worker_threads");
  int beside_a_busy_pool = 0;
  for (int i = 0; i < 2000 && beside_a_busy_pool < 20; ++i) {
    if (d.metric("amfgate_workers_busy") < workers) continue;
    EXPECT_EQ(http.post("/gateway", body).status, 200u);
    if (d.metric("amfgate_workers_busy") == workers) ++beside_a_busy_pool;
  }
  flooding = false;
  for (auto& f : flood) f.join();
  EXPECT_GT(refused, 0);  // the passwords were checked, and refused
  EXPECT_EQ(beside_a_busy_pool, 20) << refused << " logins refused";
}

TEST_F(Logins, FailuresAreLimitedThenReleased) {
  daemon d(settings(3, 1000), AMFGATE_TEST_DAEMON);
  auto http = d.client();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(call(http, "Slow.counters", {}, "ann", "wrong").description,
              "Invalid login for user \"ann\"; Slow.counters requires a login");
  }
  // Refused unchecked, at once, with the time to wait; the right password too, for now.
  const auto a = call(http, "Slow.counters", {}, "ann", "ann-secret");
  EXPECT_EQ(a.code, "Client.Authentication");
  EXPECT_EQ(a.description,
            "Too many failed logins for this user or address; retry in 1 s; Slow.counters "
            "requires a login");
  // A Flex login is told the same.
  amf::document doc;
  const auto flex = http.post("/messagebroker/amf",
                              client::flex_request(std::vector{client::flex_command(
                                  doc, amf::flex::operation::login, "", "ann", "ann-secret")}));
  const auto e =
      amf::flex::read(amf::decode_packet(amf::as_bytes(flex.body), doc).bodies.at(0).val, doc);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->fault_string, "Too many failed logins for this user or address; retry in 1 s");
  EXPECT_EQ(d.metric("amfgate_logins_throttled_total"), 2);
  // After the back-off, the password is checked again.
  std::this_thread::sleep_for(milliseconds(1100));
  EXPECT_EQ(call(http, "Slow.counters", {}, "ann", "ann-secret").target, "/1/onResult");
}

// An unknown user and a wrong password get the same answer (which hash each runs is
// services_tests' Auth.AnUnknownUserRunsTheHashAKnownOneRuns: seen, not timed).
TEST_F(Logins, UnknownUserAndWrongPasswordGetTheSameAnswer) {
  daemon d(settings(1000, 1000), AMFGATE_TEST_DAEMON);
  auto http = d.client();
  const auto known = call(http, "Slow.counters", {}, "ann", "wrong");
  const auto unknown = call(http, "Slow.counters", {}, "nobody", "wrong");
  EXPECT_EQ(known.code, "Client.Authentication");
  EXPECT_EQ(unknown.code, known.code);
  EXPECT_EQ(known.description, "Invalid login for user \"ann\"; Slow.counters requires a login");
  EXPECT_EQ(unknown.description,
            "Invalid login for user \"nobody\"; Slow.counters requires a login");
}

}  // namespace
}  // namespace amfgate::test
