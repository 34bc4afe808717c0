// The bridge against a live daemon and a real JSON backend (tests/bridge/backend.py, a Python
// HTTP server that also misbehaves on request): calls from each kind of client, the JSON
// mapping both ways, the backend's faults, timeouts, a backend that is down, the pool, TLS
// with a CA of the test's own, a Unix socket, the publish endpoint and forwarding.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/flex.hpp"
#include "amfgate/services/auth.hpp"
#include "daemon.hpp"
#include "flex_messaging.hpp"
#include "raw_socket.hpp"

namespace amfgate::test {
namespace {

const std::string backend_script = AMFGATE_SOURCE_DIR "/tests/bridge/backend.py";

// The backend, on a TCP port (with TLS if given a certificate) or a Unix socket.
class backend {
 public:
  explicit backend(std::uint16_t port, const std::string& cert = {}, const std::string& key = {})
      : where_("127.0.0.1:" + std::to_string(port)) {
    std::vector<std::string> argv{"/usr/bin/python3", backend_script, "--port",
                                  std::to_string(port)};
    if (!cert.empty()) argv.insert(argv.end(), {"--tls", cert, key});
    start(argv);
  }
  explicit backend(const std::string& unix_socket) : where_(unix_socket) {
    std::filesystem::remove(unix_socket);
    start({"/usr/bin/python3", backend_script, "--unix", unix_socket});
  }
  ~backend() { std::filesystem::remove(log_); }
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;

 private:
  void start(const std::vector<std::string>& argv) {
    log_ = "/tmp/amfgate-backend-" + std::to_string(::getpid()) + "-" +
           std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".log";
    std::filesystem::remove(log_);
    process_.start(argv, log_);
    for (int i = 0; i < 400 && process_.log().find("listening") == std::string::npos; ++i) {
      if (!process_.running()) throw std::runtime_error("the backend exited: " + process_.log());
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  std::string where_, log_;
  process process_;
};

std::string upstream(const std::string& url, const std::string& more = "") {
  return "{\"url\": \"" + url + "\"" + (more.empty() ? "" : ", ") + more + "}";
}

// One call's answer: the value (its views live in `doc`), or the fault's code and message.
struct outcome {
  amf::value result;
  std::string code, message, detail;
  bool ok() const { return code.empty(); }
};

std::string text(const amf::object_node* o, std::string_view key) {
  const amf::value* v = o ? o->find(key) : nullptr;
  return v && v->kind() == amf::type::string ? std::string(v->as_string()) : "";
}

outcome call(client::http_client& http, amf::document& doc, const std::string& target,
             std::vector<amf::value> args, bool amf3 = true, const std::string& user = {},
             const std::string& password = {}) {
  const auto res =
      http.post("/gateway", client::netconnection_request(target, args, amf3, user, password));
  EXPECT_EQ(res.status, 200u) << res.body;
  // The values are views: their bytes live in `doc` as long as they do.
  amf::packet p = amf::decode_packet(amf::as_bytes(doc.copy(res.body)), doc);
  outcome o;
  if (p.bodies.at(0).target.ends_with("/onStatus")) {
    const auto* s = p.bodies.at(0).val.as_object();
    o.code = text(s, "code");
    o.message = text(s, "description");
    o.detail = text(s, "details");
    return o;
  }
  o.result = p.bodies.at(0).val;
  return o;
}

std::string member(const amf::value& v, std::string_view key) {
  const auto* o = v.as_object();
  return text(o, key);
}

class Bridge : public ::testing::Test {
 protected:
  std::uint16_t port_ = free_port();
  backend backend_{port_};
  std::string url_ = "http://127.0.0.1:" + std::to_string(port_) + "/amf/";
};

TEST_F(Bridge, ACallFromEachClientReachesTheBackendAsPlainJsonAndComesBack) {
  const std::string hash = services::hash_password("pw");
  daemon d(
      "\"debug\": true, \"json_endpoint\": {\"enabled\": true}, "
      "\"users\": [{\"name\": \"ann\", \"password\": \"" +
      hash +
      "\", \"roles\": [\"staff\"]}], "
      "\"upstreams\": {\"crm\": " +
      upstream(url_, "\"forward_headers\": [\"Tenant\"]") +
      "}, \"bridge\": {\"Svc\": \"crm\", \"Orders.echo\": \"crm\"}");
  auto http = d.client();
  amf::document doc;

  // Each type as a backend's developers expect it, and back: an echo returns what was sent.
  amf::traits* t = doc.make_traits("com.example.Item", false, {"sku", "qty"});
  amf::object_node* item = doc.object(t);
  item->sealed = {doc.string("A-1"), amf::value::integer(3)};
  const std::byte raw[] = {std::byte{0}, std::byte{0xff}};
  amf::array_node* list = doc.array();
  list->dense = {amf::value::integer(7),
                 amf::value::number(2.5),
                 doc.string("x"),
                 amf::value::null(),
                 amf::value::boolean(true),
                 amf::value::of(item),
                 amf::value::of(doc.bytes(raw))};
  for (bool amf3 : {false, true}) {
    const auto echoed = call(http, doc, "Svc.echo", {amf::value::of(list)}, amf3);
    ASSERT_TRUE(echoed.ok()) << echoed.code << ": " << echoed.message;
    const auto* a = echoed.result.as_array();
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->dense.size(), 7u);
    EXPECT_EQ(a->dense[0].to_double(), 7);
    EXPECT_EQ(a->dense[1].to_double(), 2.5);
    EXPECT_EQ(a->dense[2].as_string(), "x");
    EXPECT_TRUE(a->dense[3].is_null());
    EXPECT_TRUE(a->dense[4].as_bool());
    const auto* back = a->dense[5].as_object();
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(back->cls->alias, "com.example.Item");  // _explicitType both ways
    EXPECT_EQ(member(a->dense[5], "sku"), "A-1");
    ASSERT_NE(a->dense[6].as_bytes(), nullptr);  // {"_bytes": base64} both ways
    EXPECT_EQ(a->dense[6].as_bytes()->bytes.size(), 2u);
  }
  // A date goes as ISO 8601: the backend sees a string and echoes it as one.
  const auto date = call(http, doc, "Svc.echo", {doc.date(1'000'000'000'123.0)});
  EXPECT_EQ(date.result.as_string(), "2001-09-09T01:46:40.123Z");

  // The backend's typed object becomes the class that [RemoteClass] reads, dates and bytes too.
  const auto user = call(http, doc, "Svc.user", {amf::value::integer(7)});
  ASSERT_TRUE(user.ok()) << user.message;
  const auto* u = user.result.as_object();
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->cls->alias, "com.example.User");
  EXPECT_EQ(member(user.result, "name"), "Ann");
  ASSERT_NE(u->find("born"), nullptr);
  ASSERT_NE(u->find("born")->as_date(), nullptr);
  EXPECT_EQ(u->find("born")->as_date()->millis, 641'565'000'250.0);
  ASSERT_NE(u->find("avatar")->as_bytes(), nullptr);
  EXPECT_EQ(u->find("avatar")->as_bytes()->bytes.size(), 3u);

  // Who calls: no user, no session; then a login, whose session the backend sees by a
  // pseudonym that is not the cookie.
  auto who = call(http, doc, "Svc.whoami", {});
  ASSERT_TRUE(who.ok()) << who.message;
  EXPECT_EQ(who.result.as_object()->find("user")->kind(), amf::type::null);
  EXPECT_EQ(member(who.result, "client"), "127.0.0.1");
  who = call(http, doc, "Svc.whoami", {}, true, "ann", "pw");
  ASSERT_TRUE(who.ok()) << who.message;
  EXPECT_EQ(member(*who.result.as_object()->find("user"), "name"), "ann");
  const std::string pseudonym = member(who.result, "session");
  EXPECT_EQ(pseudonym.size(), 32u);
  ASSERT_FALSE(http.cookies.empty());
  for (const auto& [name, id] : http.cookies) EXPECT_EQ(pseudonym.find(id), std::string::npos);

  // A header named in forward_headers reaches the backend.
  {
    amf::packet p;
    p.version = 3;
    p.headers.push_back({"Tenant", false, amf::unknown_length, doc.string("acme")});
    p.bodies.push_back({"Svc.whoami", "/1", amf::unknown_length, amf::value::of(doc.array())});
    std::string bytes;
    amf::encode_packet(p, bytes);
    const auto res = http.post("/gateway", bytes);
    const auto got = amf::decode_packet(amf::as_bytes(doc.copy(res.body)), doc);
    const auto* headers = got.bodies.at(0).val.as_object()->find("headers");
    ASSERT_NE(headers, nullptr);
    EXPECT_EQ(member(*headers, "Tenant"), "acme");
  }

  // A Flex RemoteObject call, and the JSON endpoint.
  const amf::value args[] = {doc.string("flex")};
  const auto res = http.post(
      "/gateway",
      client::flex_request(std::vector{client::flex_remoting(doc, "Orders", "echo", args, "")}));
  const auto flex = amf::flex::read(
      amf::decode_packet(amf::as_bytes(doc.copy(res.body)), doc).bodies.at(0).val, doc);
  ASSERT_TRUE(flex);
  EXPECT_EQ(flex->kind, amf::flex::kind::acknowledge);
  EXPECT_EQ(flex->body.as_string(), "flex");
  const auto j = http.post("/json/Svc/echo", "[{\"a\": [1, 2]}]", "application/json");
  EXPECT_EQ(j.status, 200u) << j.body;
  EXPECT_NE(j.body.find("\"a\""), std::string::npos) << j.body;

  // A method that is bridged alone leaves the rest of its service unbound.
  EXPECT_EQ(call(http, doc, "Orders.other", {}).code, "Server.ResourceUnavailable");
}

TEST_F(Bridge, WhatABackendDoesWrongIsAFaultAndTheConnectionIsDiscarded) {
  daemon d("\"upstreams\": {\"crm\": " + upstream(url_, "\"failure_threshold\": 1000") +
           "}, \"bridge\": {\"Svc\": \"crm\"}");
  auto http = d.client();
  amf::document doc;
  auto fail = call(http, doc, "Svc.fail", {});
  EXPECT_EQ(fail.code, "App.NotFound");  // the backend's code, message and detail
  EXPECT_EQ(fail.message, "no user 7");
  EXPECT_EQ(fail.detail, "looked in the users table");
  fail = call(http, doc, "Svc.status", {});
  EXPECT_EQ(fail.code, "Server.Upstream.Status");
  EXPECT_NE(fail.message.find("HTTP 500"), std::string::npos) << fail.message;
  fail = call(http, doc, "Svc.garbage", {});
  EXPECT_EQ(fail.code, "Server.Upstream.BadReply");
  EXPECT_NE(fail.message.find("not JSON"), std::string::npos) << fail.message;
  fail = call(http, doc, "Svc.half", {});
  EXPECT_EQ(fail.code, "Server.Upstream.Failed");
  // 10 GB announced: refused at limits.max_response_bytes, not read.
  fail = call(http, doc, "Svc.huge", {});
  EXPECT_EQ(fail.code, "Server.Upstream.Failed");
  EXPECT_NE(fail.message.find("more than"), std::string::npos) << fail.message;
  // A method name from the client never becomes another path.
  fail = call(http, doc, "Svc.a/b", {});
  EXPECT_EQ(fail.code, "Client.Upstream.BadMethod");
  // And the next call works, on a connection that is not one of those.
  const auto ok = call(http, doc, "Svc.echo", {doc.string("still here")});
  ASSERT_TRUE(ok.ok()) << ok.message;
  EXPECT_EQ(ok.result.as_string(), "still here");
  const auto metrics = http.get("/metrics").body;
  EXPECT_NE(metrics.find("amfgate_upstream_calls_total{upstream=\"crm\",outcome=\"fault\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("amfgate_upstream_calls_total{upstream=\"crm\",outcome=\"failed\"} 3"),
            std::string::npos);
}

TEST_F(Bridge, CallsShareAPoolOfKeepAliveConnections) {
  daemon d("\"threads\": 1, \"upstreams\": {\"crm\": " + upstream(url_) +
           "}, \"bridge\": {\"Svc\": \"crm\"}");
  auto http = d.client();
  amf::document doc;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(call(http, doc, "Svc.echo", {doc.string("x")}).ok());
  EXPECT_EQ(d.metric("amfgate_upstream_connects_total{upstream=\"crm\"}"), 1);
  const auto accepted = call(http, doc, "Svc.connections", {});
  EXPECT_EQ(accepted.result.to_double(), 1);
  EXPECT_EQ(d.metric("amfgate_upstream_connections{upstream=\"crm\",state=\"idle\"}"), 1);
  // Stopped with it in the pool, the daemon closes it while the I/O thread it belongs to is
  // still there (ASan aborted the exit when the pool outlived it).
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(), 0) << d.log();
}

TEST_F(Bridge, AHangingBackendIsAServerTimeoutAndStallsNothingElse) {
  daemon d(
      "\"threads\": 1, \"limits\": {\"call_timeouts\": {\"Svc.hang\": 1500}}, "
      "\"upstreams\": {\"crm\": " +
      upstream(url_, "\"max_connections\": 1, \"max_inflight\": 1") +
      ", \"other\": " + upstream(url_) + "}, \"bridge\": {\"Svc\": \"crm\", \"Other\": \"other\"}");
  auto hung = std::async(std::launch::async, [&] {
    auto http = d.client();
    amf::document doc;
    return call(http, doc, "Svc.hang", {}).code;
  });
  ASSERT_TRUE(d.metric_reaches("amfgate_upstream_inflight{upstream=\"crm\"}", 1));
  // While it hangs, on the daemon's one I/O thread: another upstream, a C++ service, and
  // this upstream past its max_inflight.
  auto http = d.client();
  amf::document doc;
  const auto other = call(http, doc, "Other.echo", {doc.string("free")});
  EXPECT_EQ(other.result.as_string(), "free");
  EXPECT_EQ(call(http, doc, "EchoService.echo", {doc.string("free")}).result.as_string(), "free");
  EXPECT_EQ(call(http, doc, "Svc.echo", {doc.string("x")}).code, "Server.Busy");
  EXPECT_EQ(hung.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_EQ(hung.get(), "Server.Timeout");
}

// A client that hangs up while its call holds a connection, and one while it waits for one:
// neither is a failure of the upstream, and the pool gets both places back.
TEST_F(Bridge, AClientThatHangsUpIsNoFailureOfTheUpstreamAndLeavesThePoolWhole) {
  daemon d("\"upstreams\": {\"crm\": " +
           upstream(url_, "\"max_connections\": 1, \"failure_threshold\": 2") +
           "}, \"bridge\": {\"Svc\": \"crm\"}");
  const auto send_call = [&](raw_socket& s, const char* target) {
    const auto body = client::netconnection_request(target, std::vector<amf::value>{}, true);
    s.send(
        "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  const std::string inflight = "amfgate_upstream_inflight{upstream=\"crm\"}";
  for (int round = 0; round < 3; ++round) {  // more than failure_threshold
    {
      raw_socket holding(d.port()), waiting(d.port());
      send_call(holding, "Svc.hang");
      ASSERT_TRUE(d.metric_reaches(inflight, 1));
      send_call(waiting, "Svc.hang");
      ASSERT_TRUE(d.metric_reaches(inflight, 2));
    }  // both hang up
    ASSERT_TRUE(d.metric_reaches(inflight, 0));
  }
  EXPECT_EQ(d.metric("amfgate_upstream_calls_total{upstream=\"crm\",outcome=\"cancelled\"}"), 6);
  EXPECT_EQ(d.metric("amfgate_upstream_calls_total{upstream=\"crm\",outcome=\"failed\"}"), 0);
  EXPECT_EQ(d.metric("amfgate_upstream_up{upstream=\"crm\"}"), 1);
  // The connection of each call that held one was mid-answer: closed, its place free again.
  EXPECT_EQ(d.metric("amfgate_upstream_connections{upstream=\"crm\",state=\"open\"}"), 0);
  auto http = d.client();
  amf::document doc;
  const auto after = call(http, doc, "Svc.echo", {doc.string("still here")});
  ASSERT_TRUE(after.ok()) << after.code << ": " << after.message;
  EXPECT_EQ(after.result.as_string(), "still here");
}

TEST(BridgeDown, AnUpstreamThatIsDownFailsFastAndComesBackWhenItReturns) {
  const auto port = free_port();
  daemon d("\"upstreams\": {\"crm\": " +
           upstream("http://127.0.0.1:" + std::to_string(port) + "/amf/",
                    "\"failure_threshold\": 2, \"down_ms\": 200") +
           "}, \"bridge\": {\"Svc\": \"crm\"}");
  auto http = d.client();
  amf::document doc;
  for (int i = 0; i < 2; ++i) {
    const auto refused = call(http, doc, "Svc.echo", {doc.string("x")});
    EXPECT_EQ(refused.code, "Server.Upstream.Unavailable");
    EXPECT_NE(refused.message.find("refused"), std::string::npos) << refused.message;
  }
  const auto fast = call(http, doc, "Svc.echo", {doc.string("x")});
  EXPECT_EQ(fast.code, "Server.Upstream.Unavailable");
  EXPECT_NE(fast.message.find("is down after 2 failures"), std::string::npos) << fast.message;
  EXPECT_EQ(d.metric("amfgate_upstream_up{upstream=\"crm\"}"), 0);
  EXPECT_GE(d.metric("amfgate_upstream_calls_total{upstream=\"crm\",outcome=\"unavailable\"}"), 3);

  backend returned(port);
  bool back = false;
  for (int i = 0; i < 200 && !back; ++i) {
    back = call(http, doc, "Svc.echo", {doc.string("x")}).ok();
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(back);
  EXPECT_EQ(d.metric("amfgate_upstream_up{upstream=\"crm\"}"), 1);
}

// A CA of the test's own, and a certificate it signed for localhost.
struct test_ca {
  std::string dir = "/tmp/amfgate-ca-" + std::to_string(::getpid());
  std::string ca = dir + "/ca.pem", cert = dir + "/cert.pem", key = dir + "/key.pem";
  test_ca() {
    std::filesystem::create_directories(dir);
    const std::string cmd =
        "cd " + dir +
        " && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=amfgate-test-ca "
        "-keyout ca.key -out ca.pem"
        " && openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem -out "
        "cert.csr && printf 'subjectAltName=DNS:localhost\\n' > san.txt"
        " && openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.txt -out cert.pem";
    if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) {
      throw std::runtime_error("openssl could not make the test CA");
    }
  }
  ~test_ca() { std::filesystem::remove_all(dir); }
};

TEST(BridgeTransport, HttpsIsVerifiedAgainstTheCAAndAUnixSocketServesToo) {
  test_ca ca;
  const auto port = free_port();
  backend tls(port, ca.cert, ca.key);
  const std::string sock = "/tmp/amfgate-backend-" + std::to_string(::getpid()) + ".sock";
  backend local(sock);
  const std::string https = "https://localhost:" + std::to_string(port) + "/amf/";
  daemon d("\"upstreams\": {\"tls\": " + upstream(https, "\"ca_file\": \"" + ca.ca + "\"") +
           ", \"untrusted\": " + upstream(https) +
           ", \"local\": " + upstream("unix:" + sock + ":/amf/") +
           "}, \"bridge\": {\"Tls\": \"tls\", \"Untrusted\": \"untrusted\", \"Local\": "
           "\"local\"}");
  auto http = d.client();
  amf::document doc;
  const auto secure = call(http, doc, "Tls.echo", {doc.string("over tls")});
  ASSERT_TRUE(secure.ok()) << secure.code << ": " << secure.message;
  EXPECT_EQ(secure.result.as_string(), "over tls");
  // The system's CAs do not know the test's: the handshake fails, nothing is sent.
  const auto refused = call(http, doc, "Untrusted.echo", {doc.string("x")});
  EXPECT_EQ(refused.code, "Server.Upstream.Unavailable");
  EXPECT_NE(refused.message.find("TLS handshake"), std::string::npos) << refused.message;
  const auto unix_socket = call(http, doc, "Local.echo", {doc.string("over a socket")});
  ASSERT_TRUE(unix_socket.ok()) << unix_socket.code << ": " << unix_socket.message;
  EXPECT_EQ(unix_socket.result.as_string(), "over a socket");
  std::filesystem::remove(sock);
}

TEST_F(Bridge, ABackendPublishesWithItsTokenAndWhatProducersSendIsForwarded) {
  const std::string token = "s3cret-token-0123456789";
  daemon d("\"publish\": {\"enabled\": true, \"tokens\": [\"" + token +
           "\"]}, \"messaging\": {\"destinations\": {\"news\": {\"allow_subtopics\": true}, "
           "\"chat\": {\"forward\": \"crm\"}}}, \"upstreams\": {\"crm\": " +
           upstream(url_) + "}, \"bridge\": {\"Svc\": \"crm\"}");
  flex_channel reader(d.port());
  reader.connect();
  flex_consumer consumer{reader, "news", "sports"};
  ASSERT_FALSE(consumer.subscribe().is_fault());

  // Without credentials, with a wrong token: refused, nothing published.
  const int port = d.port();
  auto post = [&](const std::string& auth, const std::string& body) {
    raw_socket s(port);
    s.send("POST /publish/news HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           (auth.empty() ? "" : "Authorization: Bearer " + auth + "\r\n") + "Content-Length: " +
           std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    return s.read_all();
  };
  const std::string message =
      R"({"body": {"score": "2-1"}, "subtopic": "sports", "headers": {"priority": 2}})";
  EXPECT_EQ(post("", message).rfind("HTTP/1.1 401", 0), 0u);
  EXPECT_EQ(post("wrong-token-0123456789", message).rfind("HTTP/1.1 403", 0), 0u);
  EXPECT_EQ(d.metric("amfgate_messaging_published_total{destination=\"news\"}"), 0);
  EXPECT_EQ(post(token, R"({"body": 1, "subtopic": "no*such"})").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(d.metric("amfgate_messaging_published_total{destination=\"news\"}"), 0);
  EXPECT_EQ(post(token, message).rfind("HTTP/1.1 202", 0), 0u);
  const flex_reply polled = consumer.receive();
  const auto got = polled.messages();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(member(got[0].body, "score"), "2-1");
  EXPECT_EQ(got[0].header("priority").to_double(), 2);

  // A Producer's message to "chat" reaches the backend, after it is published.
  flex_channel writer(d.port());
  writer.connect();
  flex_producer producer{writer, "chat"};
  amf::document doc;
  const flex_reply ack = writer.exchange({producer.async_message(doc, doc.string("hi all"))}).at(0);
  ASSERT_FALSE(ack.is_fault());
  auto http = d.client();
  bool forwarded = false;
  for (int i = 0; i < 200 && !forwarded; ++i) {
    const auto list = call(http, doc, "Svc.forwarded", {});
    if (const auto* a = list.result.as_array(); a && !a->dense.empty()) {
      EXPECT_EQ(member(a->dense[0], "destination"), "chat");
      EXPECT_EQ(member(a->dense[0], "body"), "hi all");
      forwarded = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
  }
  EXPECT_TRUE(forwarded);
  EXPECT_TRUE(d.metric_reaches("amfgate_forwards_total{outcome=\"sent\"}", 1));
}

TEST_F(Bridge, ADestinationsRightsHookIsAnUpstreamCall) {
  const std::string hash = services::hash_password("pw");
  daemon d(R"("messaging": {"destinations": {"chat": {"allow_subtopics": true,
                                                      "authorize": "crm"}}},
              "upstreams": {"crm": )" +
           upstream(url_) + R"(}, "bridge": {"Svc": "crm"},
              "users": [{"name": "ann", "password": ")" +
           hash + R"("}, {"name": "bob", "password": ")" + hash + R"("}])");
  const auto logged_in = [&](const std::string& user) {
    flex_channel c = connected(d.port());
    EXPECT_TRUE(login(c, user, "pw")) << user;
    return c;
  };
  flex_channel ann = logged_in("ann"), bob = logged_in("bob");
  flex_consumer ann_own{ann, "chat", "rooms.ann"}, bob_own{bob, "chat", "rooms.bob"};
  ASSERT_EQ(fault_text(ann_own.subscribe()), "");
  ASSERT_EQ(fault_text(bob_own.subscribe()), "");
  flex_consumer ann_bobs{ann, "chat", "rooms.bob"};
  EXPECT_EQ(fault_text(ann_bobs.subscribe()),
            "Client.Authorization: user \"ann\" may not subscribe to subtopic \"rooms.bob\" of "
            "destination \"chat\" (10557)");
  flex_producer ann_to_own{ann, "chat", "rooms.ann"}, ann_to_bobs{ann, "chat", "rooms.bob"};
  ASSERT_EQ(fault_text(ann_to_own.send("mine")), "");
  EXPECT_NE(fault_text(ann_to_bobs.send("yours")).find("(10558)"), std::string::npos);
  EXPECT_EQ(texts(ann_own.receive()), std::vector<std::string>{"mine"});
  EXPECT_TRUE(bob_own.receive().messages().empty());  // what was blocked reached nobody

  // A MULTI_SUBSCRIBE whose entries differ by their selector only asks once.
  flex_consumer multi{ann, "chat"};
  amf::document entries;
  amf::array_node* add = entries.array();
  for (const char* e : {"rooms.ann_;_n = 1", "rooms.ann_;_n = 2"}) {
    add->dense.push_back(entries.string(e));
  }
  ASSERT_EQ(fault_text(multi.command(amf::flex::operation::multi_subscribe,
                                     {{"DSAddSub", amf::value::of(add)}})),
            "");

  // An upstream that fails refuses: the hook fails closed, and says why.
  flex_consumer broken{ann, "chat", "rooms.broken"};
  const std::string refused = fault_text(broken.subscribe());
  EXPECT_EQ(refused.rfind("Server.Upstream.Status: upstream crm answered HTTP 500", 0), 0u)
      << refused;

  // What the backend was asked, as the bridge's doc says.
  auto http = d.client();
  amf::document doc;
  const auto asked = call(http, doc, "Svc.asked", {});
  const auto* list = asked.result.as_array();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->dense.size(), 7u);  // four subscribes, two sends, one for two entries
  const amf::value& send = list->dense[3];
  EXPECT_EQ(member(send, "operation"), "send");
  EXPECT_EQ(member(send, "destination"), "chat");
  EXPECT_EQ(member(send, "subtopic"), "rooms.ann");
  const amf::value* user = send.as_object()->find("user");
  ASSERT_TRUE(user);
  EXPECT_EQ(member(*user, "name"), "ann");
}

TEST(BridgePublish, OnAnAddressOfItsOwnTheEndpointIsServedThereAlone) {
  const std::string token = "s3cret-token-0123456789";
  const auto own = free_port();
  daemon d("\"publish\": {\"enabled\": true, \"tokens\": [\"" + token +
           "\"], \"listen\": {\"address\": \"127.0.0.1\", \"port\": " + std::to_string(own) +
           "}}, \"messaging\": {\"destinations\": {\"news\": {}}}");
  auto post = [&](std::uint16_t port, const std::string& target) {
    raw_socket s(port);
    const std::string body = R"({"body": "hi"})";
    s.send("POST " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           "Authorization: Bearer " + token + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body);
    return s.read_all();
  };
  EXPECT_EQ(post(d.port(), "/publish/news").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(post(own, "/gateway").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(d.metric("amfgate_messaging_published_total{destination=\"news\"}"), 0);
  EXPECT_EQ(post(own, "/publish/news").rfind("HTTP/1.1 202", 0), 0u);
  EXPECT_EQ(d.metric("amfgate_messaging_published_total{destination=\"news\"}"), 1);
}

}  // namespace
}  // namespace amfgate::test
