// Hostile input against one live daemon (test_daemon.cpp, with users, an access rule and
// small messages on): small requests that used to cost the daemon hundreds of password
// checks, quadratic encoding, gigabyte replies, a session, or a smuggled request. Each
// amplification case also checks that /healthz keeps answering meanwhile; what it costs is
// shown by what the daemon did (checks logged, reply sizes), not by the time it took.
#include <gtest/gtest.h>

#include <atomic>
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

using std::chrono::milliseconds;

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string ann = services::hash_password("ann-secret");
    const std::string bob = services::hash_password("bob-secret");
    d_ = new daemon(
        "\"users\": [{\"name\": \"ann\", \"password\": \"" + ann +
            "\", \"roles\": []}, {\"name\": \"bob\", \"password\": \"" + bob +
            "\", \"roles\": []}], \"access\": {\"Slow.counters\": {}}, "
            "\"small_messages\": true, \"sessions\": {\"max_sessions\": 50}, "
            "\"logins\": {\"max_failures\": 1000}, "
            "\"limits\": {\"max_response_bytes\": 4194304, \"max_connections_per_client\": 8, "
            "\"max_requests_per_client\": 4, \"max_inflight_bytes\": 41943040}",
        AMFGATE_TEST_DAEMON);
  }
  static void TearDownTestSuite() { delete d_; }
  static daemon* d_;

  static amf::packet post(client::http_client& http, const std::string& body, amf::document& doc,
                          const std::string& path = "/gateway") {
    last_ = http.post(path, body);
    if (last_.status != 200) throw std::runtime_error("HTTP " + std::to_string(last_.status));
    return amf::decode_packet(amf::as_bytes(last_.body), doc);
  }
  static std::string field(const amf::value& v, std::string_view name) {
    const auto* o = v.as_object();
    const auto* f = o ? o->find(name) : nullptr;
    return f && f->kind() == amf::type::string ? std::string(f->as_string()) : std::string();
  }

  // Runs `attack` while /healthz is asked every 20 ms: whether each was answered 200.
  // (How fast is the load script's to measure: a time bound fails on a busy machine.)
  template <class F>
  static bool healthz_during(F attack) {
    std::atomic<bool> done{false};
    auto probe = std::async(std::launch::async, [&] {
      auto http = d_->client();
      while (!done) {
        if (http.get("/healthz").status != 200) return false;
        std::this_thread::sleep_for(milliseconds(20));
      }
      return true;
    });
    attack();
    done = true;
    return probe.get();
  }
  // How many passwords of `user` the daemon has checked and refused, from its log.
  static std::size_t refusals(std::string_view user) {
    const std::string line = "login refused for user \"" + std::string(user) + "\" from";
    const std::string log = d_->log();
    std::size_t n = 0;
    for (auto at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
    return n;
  }

  static client::response last_;
};
daemon* Hostile::d_ = nullptr;
client::response Hostile::last_;

amf::value credentials(amf::document& doc, std::string_view user, std::string_view password) {
  amf::object_node* o = doc.object();
  o->dynamic.push_back({"userid", doc.string(user)});
  o->dynamic.push_back({"password", doc.string(password)});
  return amf::value::of(o);
}

// A packet of `calls` bodies calling `target` with no arguments.
amf::packet calls(amf::document& doc, std::string_view target, int n) {
  amf::packet p(doc.resource());
  p.version = 0;
  for (int i = 1; i <= n; ++i) {
    p.bodies.push_back({target, doc.copy("/" + std::to_string(i)), amf::unknown_length,
                        amf::value::of(doc.array())});
  }
  return p;
}

std::string encoded(const amf::packet& p) {
  std::string out;
  amf::encode_packet(p, out);
  return out;
}

TEST_F(Hostile, ARequestChecksOnePasswordAtMost) {
  auto http = d_->client();
  amf::document doc;
  // 300 different wrong passwords: none is checked, and the protected call says why.
  amf::packet many = calls(doc, "Slow.counters", 1);
  for (int i = 0; i < 300; ++i) {
    many.headers.push_back({"Credentials", false, amf::unknown_length,
                            credentials(doc, "ann", "wrong" + std::to_string(i))});
  }
  const std::string body = encoded(many);
  amf::document in;
  amf::packet answer(in.resource());
  d_->logged("listening on");  // the log so far is flushed
  const std::size_t checked = refusals("ann");
  EXPECT_TRUE(healthz_during([&] { answer = post(http, body, in); }));
  EXPECT_EQ(field(answer.bodies.at(0).val, "description"),
            "several different Credentials headers in one request; none was checked; "
            "Slow.counters requires a login");

  // 300 copies of one wrong password cost one check.
  amf::packet same = calls(doc, "Slow.counters", 1);
  for (int i = 0; i < 300; ++i) {
    same.headers.push_back(
        {"Credentials", false, amf::unknown_length, credentials(doc, "ann", "wrong")});
  }
  answer = post(http, encoded(same), in);
  EXPECT_EQ(field(answer.bodies.at(0).val, "description"),
            "Invalid login for user \"ann\"; Slow.counters requires a login");
  // Counted in the log, which the daemon writes within a second: one check in all.
  EXPECT_TRUE(d_->logged("login refused for user \"ann\""));
  std::this_thread::sleep_for(milliseconds(1200));
  EXPECT_EQ(refusals("ann"), checked + 1);

  // Two Flex logins in one packet: the second is refused unchecked.
  amf::document fd;
  const std::vector logins{client::flex_command(fd, amf::flex::operation::login, "", "ann", "x"),
                           client::flex_command(fd, amf::flex::operation::login, "", "ann", "y")};
  answer = post(http, client::flex_request(logins), in, "/messagebroker/amf");
  const auto second = amf::flex::read(answer.bodies.at(1).val, in);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->fault_string, "one password check per request: this request had one");
  EXPECT_EQ(second->correlation_id, amf::flex::read(logins[1], fd)->message_id);
}

TEST_F(Hostile, LongCredentialsAreRefusedUnhashedAndNeverCopied) {
  auto http = d_->client();
  amf::document doc;
  const std::string name(64 * 1024, 'n');
  amf::packet p = calls(doc, "Slow.counters", 200);
  p.headers.push_back({"Credentials", false, amf::unknown_length, credentials(doc, name, "pw")});
  const std::string body = encoded(p);
  amf::document in;
  amf::packet answer(in.resource());
  EXPECT_TRUE(healthz_during([&] { answer = post(http, body, in); }));
  EXPECT_LT(last_.body.size(), body.size()) << "the reply must not grow with the name";
  ASSERT_EQ(answer.bodies.size(), 200u);
  EXPECT_EQ(field(answer.bodies[199].val, "description"),
            "Invalid login: a user name or password longer than 256 bytes; Slow.counters "
            "requires a login");
  EXPECT_TRUE(d_->logged("credentials over 256 bytes"));
  EXPECT_EQ(d_->log().find(std::string(300, 'n')), std::string::npos);
}

TEST_F(Hostile, AStringReferencedManyTimesEncodesInLinearTime) {
  auto http = d_->client();
  amf::document doc;
  // One 1 MiB string and 30,000 references to it: 1.1 MB on the wire.
  const amf::value big = doc.string(std::string(std::size_t{1} << 20, 's'));
  amf::array_node* a = doc.array();
  for (int i = 0; i < 30'001; ++i) a->dense.push_back(big);
  const std::vector args{amf::value::of(a).with_flags(amf::value::avmplus)};
  const std::string body = client::netconnection_request("echo", args, true);
  ASSERT_LT(body.size(), std::size_t{1200} << 10);
  amf::document in;
  amf::packet answer(in.resource());
  // It took 4.9 s (release build) to hash 1 MiB per reference; the reply, which writes each
  // reference as one, shows that each was found without (its size below).
  EXPECT_TRUE(healthz_during([&] { answer = post(http, body, in); }));
  const auto* echoed = answer.bodies.at(0).val.as_array();
  ASSERT_NE(echoed, nullptr);
  ASSERT_EQ(echoed->dense.size(), 30'001u);
  EXPECT_EQ(echoed->dense[30'000].as_string().size(), std::size_t{1} << 20);
  EXPECT_LT(last_.body.size(), body.size() + 1024);
}

TEST_F(Hostile, AReplyOverTheLimitIsAFaultForItsBodyOnly) {
  auto http = d_->client();
  amf::document doc;
  amf::packet p(doc.resource());
  p.version = 0;
  for (const int bytes : {8 << 20, 10}) {
    amf::array_node* args = doc.array();
    args->dense.push_back(amf::value::integer(bytes));
    p.bodies.push_back({"Slow.text", doc.copy("/" + std::to_string(p.bodies.size() + 1)),
                        amf::unknown_length, amf::value::of(args)});
  }
  amf::document in;
  const amf::packet answer = post(http, encoded(p), in);
  ASSERT_EQ(answer.bodies.size(), 2u);
  EXPECT_EQ(answer.bodies[0].target, "/1/onStatus");
  EXPECT_EQ(field(answer.bodies[0].val, "code"), "Server.ResponseTooLarge");
  EXPECT_EQ(answer.bodies[1].target, "/2/onResult");
  EXPECT_EQ(answer.bodies[1].val.as_string(), "xxxxxxxxxx");
  EXPECT_LT(last_.body.size(), std::size_t{4} << 20);
}

TEST_F(Hostile, ALoginAlwaysGetsANewSessionId) {
  amf::document doc, in;
  const auto counters = client::netconnection_request("Slow.counters", {}, false);
  std::string planted;
  // The victim logs in as ann on a request that carries it, as a cookie or in the URL.
  for (const bool in_url : {false, true}) {
    // The attacker logs in as bob and plants his session id.
    auto attacker = d_->client();
    post(attacker, client::netconnection_request("Slow.counters", {}, false, "bob", "bob-secret"),
         in);
    planted = attacker.cookies.at("AMFGATESESSIONID");
    ASSERT_FALSE(planted.empty());
    auto victim = d_->client();
    std::string path = "/gateway";
    if (in_url) {
      path += ";AMFGATESESSIONID=" + planted;
    } else {
      victim.cookies["AMFGATESESSIONID"] = planted;
    }
    const amf::packet p =
        post(victim, client::netconnection_request("Slow.counters", {}, false, "ann", "ann-secret"),
             in, path);
    EXPECT_EQ(p.bodies.at(0).target, "/1/onResult");
    const std::string fresh = victim.cookies.at("AMFGATESESSIONID");
    EXPECT_NE(fresh, planted);
    EXPECT_EQ(p.headers.at(0).name, "AppendToGatewayUrl");
    EXPECT_EQ(p.headers.at(0).val.as_string(), ";AMFGATESESSIONID=" + fresh);
    EXPECT_NE(last_.header("Set-Cookie").find("; HttpOnly; SameSite=Lax"), std::string::npos);
  }
  // The planted id ended with the victim's login: it has no principal any more.
  auto replay = d_->client();
  replay.cookies["AMFGATESESSIONID"] = planted;
  const amf::packet p = post(replay, counters, in);
  EXPECT_EQ(field(p.bodies.at(0).val, "description"), "Slow.counters requires a login");
}

TEST_F(Hostile, AnonymousPingsMakeNoSessionsAndEvictNoLogins) {
  amf::document doc, in;
  auto user = d_->client();
  post(user, client::netconnection_request("Slow.counters", {}, false, "ann", "ann-secret"), in);
  ASSERT_TRUE(user.cookies.count("AMFGATESESSIONID"));
  // max_sessions is 50 here: 500 negotiating pings used to make 500 sessions.
  const std::string ping = client::flex_request(
      std::vector{client::flex_command(doc, amf::flex::operation::client_ping, "")});
  auto anonymous = d_->client();
  for (int i = 0; i < 500; ++i) {
    anonymous.cookies.clear();
    const amf::packet p = post(anonymous, ping, in, "/messagebroker/amf");
    ASSERT_NE(p.bodies.at(0).val.as_external(), nullptr) << "the negotiated answer is DSK";
    ASSERT_EQ(last_.header("Set-Cookie"), "");
  }
  const amf::packet p = post(user, client::netconnection_request("Slow.counters", {}, false), in);
  EXPECT_EQ(p.bodies.at(0).target, "/1/onResult");
}

TEST_F(Hostile, AmbiguousFramingIsRefusedAndCloses) {
  const std::string smuggled = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const std::string te : {"xchunked", "identity", "chunked, identity", "gzip"}) {
    raw_socket s(d_->port());
    s.send(
        "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
        "Transfer-Encoding: " +
        te + "\r\n\r\n" + smuggled);
    const std::string all = s.read_all();
    EXPECT_TRUE(all.starts_with("HTTP/1.1 501")) << te << ": " << all;
    EXPECT_EQ(all.find("HTTP/1.1", 1), std::string::npos) << te << ": one answer only";
  }
  for (const std::string headers : {"Transfer-Encoding: xchunked\r\nContent-Length: 0",
                                    "Content-Length: 0\r\n"
                                    "Transfer-Encoding: xchunked"}) {
    raw_socket s(d_->port());
    s.send("POST /gateway HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n\r\n" + smuggled);
    const std::string all = s.read_all();
    EXPECT_TRUE(all.starts_with("HTTP/1.1 400")) << all;
    EXPECT_EQ(all.find("HTTP/1.1", 1), std::string::npos) << "one answer only";
  }
  raw_socket no_host(d_->port());
  no_host.send("GET /healthz HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(no_host.read_all().starts_with("HTTP/1.1 400"));
  raw_socket old(d_->port());
  old.send("GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(old.read_all().starts_with("HTTP/1.0 200"));
}

TEST_F(Hostile, CodingsAndMediaTypesAreCaseInsensitiveAndContinueIsAnswered) {
  amf::document doc;
  const std::string amf =
      client::netconnection_request("echo", std::vector{doc.string("hi")}, false);
  auto chunk = [](const std::string& s) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", s.size());
    return std::string(size) + "\r\n" + s + "\r\n0\r\n\r\n";
  };
  raw_socket s(d_->port());
  s.send(
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: Application/X-AMF\r\n"
      "Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n" +
      chunk(amf));
  const std::string all = s.read_all();
  EXPECT_TRUE(all.starts_with("HTTP/1.1 200")) << all;
  EXPECT_NE(all.find("hi"), std::string::npos);

  raw_socket c(d_->port());
  c.send(
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
      "Expect: 100-continue\r\nConnection: close\r\nContent-Length: " +
      std::to_string(amf.size()) + "\r\n\r\n");
  EXPECT_EQ(c.read_some(), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send(amf);
  EXPECT_TRUE(c.read_all().starts_with("HTTP/1.1 200"));
}

TEST_F(Hostile, OneClientCannotTakeEveryConnection) {
  // 127.0.0.2 is another client on loopback: it holds its 8 connections, and more.
  std::vector<std::unique_ptr<raw_socket>> held;
  for (int i = 0; i < 8; ++i) held.push_back(std::make_unique<raw_socket>(d_->port(), "127.0.0.2"));
  std::this_thread::sleep_for(milliseconds(100));
  raw_socket ninth(d_->port(), "127.0.0.2");
  ninth.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string refused = ninth.read_all();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  // Others are served as ever.
  amf::document doc, in;
  auto http = d_->client();
  EXPECT_TRUE(healthz_during([&] {
    for (int i = 0; i < 20; ++i) {
      const amf::packet p = post(
          http, client::netconnection_request("echo", std::vector{doc.string("ok")}, false), in);
      ASSERT_EQ(p.bodies.at(0).val.as_string(), "ok");
    }
  }));
}

TEST_F(Hostile, OneClientsRequestsInFlightAreLimited) {
  // 127.0.0.3 holds 4 workers (its limit) with Slow.hold; its fifth request is refused.
  amf::document doc;
  const std::string hold = client::netconnection_request("Slow.hold", {}, false);
  auto post_raw = [](const std::string& amf) {
    return "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
           "Connection: close\r\nContent-Length: " +
           std::to_string(amf.size()) + "\r\n\r\n" + amf;
  };
  std::vector<std::unique_ptr<raw_socket>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(std::make_unique<raw_socket>(d_->port(), "127.0.0.3"));
    holders.back()->send(post_raw(hold));
  }
  std::this_thread::sleep_for(milliseconds(300));
  raw_socket fifth(d_->port(), "127.0.0.3");
  fifth.send(post_raw(client::netconnection_request("echo", std::vector{doc.string("x")}, false)));
  const std::string refused = fifth.read_all();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  EXPECT_NE(refused.find("too many requests in flight from your address"), std::string::npos);
  auto http = d_->client();
  post(http, client::netconnection_request("Slow.release", {}, false), doc);
  for (auto& h : holders) EXPECT_TRUE(h->read_all().starts_with("HTTP/1.1 200"));
}

TEST_F(Hostile, BodiesInFlightShareOneMemoryBudget) {
  // The budget is 40 MiB here: three bodies of 15 MiB announced and held open do not fit.
  const std::string head =
      "POST /gateway HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amf\r\n"
      "Content-Length: 15728640\r\n\r\n";
  raw_socket a(d_->port(), "127.0.0.4"), b(d_->port(), "127.0.0.5"), c(d_->port(), "127.0.0.6");
  a.send(head);
  b.send(head);
  std::this_thread::sleep_for(milliseconds(200));
  c.send(head);
  const std::string refused = c.read_all();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos);
  EXPECT_NE(refused.find("server busy: requests in flight hold the memory they may"),
            std::string::npos);
  // Small requests still fit.
  amf::document doc, in;
  auto http = d_->client();
  const amf::packet p =
      post(http, client::netconnection_request("echo", std::vector{doc.string("ok")}, false), in);
  EXPECT_EQ(p.bodies.at(0).val.as_string(), "ok");
}

TEST_F(Hostile, TheLogEscapesClientTextAndRedactsSessionIds) {
  amf::document doc, in;
  auto http = d_->client();
  post(http, client::netconnection_request("Slow.counters", {}, false, "eve\nFORGED LINE", "x"), in,
       "/gateway;AMFGATESESSIONID=0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(d_->logged("user \"eve\\nFORGED LINE\""));
  EXPECT_TRUE(d_->logged("/gateway;AMFGATESESSIONID=<redacted>"));
  EXPECT_EQ(d_->log().find("\nFORGED LINE"), std::string::npos);
  EXPECT_EQ(d_->log().find("0123456789abcdef0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace amfgate::test
