#include "amfgate/server/gateway.hpp"

#include <gtest/gtest.h>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"
#include "amfgate/services/builtin.hpp"
#include "gateway_run.hpp"

namespace amfgate::server {
namespace {

struct product {
  std::int32_t id = 0;
  std::string name;
};

}  // namespace
}  // namespace amfgate::server

AMF_CLASS(amfgate::server::product, "com.example.Product", id, name);

namespace amfgate::server {
namespace {

class Gateway : public ::testing::Test {
 protected:
  Gateway()
      : sessions_(100, std::chrono::minutes(1)),
        users_({{"ann", services::hash_password("pw"), {"admin"}}}),
        log_(std::make_shared<spdlog::logger>("test",
                                              std::make_shared<spdlog::sinks::null_sink_mt>())) {
    services::add_echo_service(registry_);
    registry_.bind("Shop", "find", [](std::int32_t id) { return product{id, "lamp"}; });
    registry_.bind("Shop", "boom", []() -> int { throw std::runtime_error("disk on fire"); });
    registry_.bind("Shop", "refuse", []() -> int {
      throw services::fault("Shop.Closed", "closed today", "come back tomorrow");
    });
    registry_.bind("Admin", "secret", [] { return std::string("42"); });
    cfg_.access["Admin"] = config::access_rule{true, {"admin"}};
  }

  gateway make_gateway() {
    return gateway(cfg_, registry_, channel_, sessions_, users_, pool_, stats_, log_);
  }

  // Sends `body`, decodes the answer.
  amf::packet call(const std::string& body, exchange& ex) {
    gateway gw = make_gateway();
    run(gw, body, ex);
    EXPECT_EQ(ex.reply.status, 200u) << ex.reply.body;
    return amf::decode_packet(amf::as_bytes(ex.reply.body), doc_);
  }
  amf::packet call(const std::string& body) {
    last_ = exchange{};
    return call(body, last_);
  }

  config::gateway_config cfg_;
  services::registry registry_;
  services::memory_session_store sessions_;
  messaging::broker broker_;
  messaging::channel channel_{broker_, sessions_, cfg_.limits.max_response_bytes};
  services::user_table users_;
  worker_pool pool_{2, 16};
  metrics stats_;
  std::shared_ptr<spdlog::logger> log_;
  amf::document doc_;
  exchange last_;
};

TEST_F(Gateway, NetConnectionResultsAndTypedObjects) {
  amf::document d;
  const amf::value args[] = {amf::value::number(7)};
  amf::packet p = call(client::netconnection_request("Shop.find", args, false));
  ASSERT_EQ(p.bodies.size(), 1u);
  EXPECT_EQ(p.bodies[0].target, "/1/onResult");
  EXPECT_EQ(p.bodies[0].response, "null");
  auto* o = p.bodies[0].val.as_object();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cls->alias, "com.example.Product");
  EXPECT_EQ(o->find("id")->to_double(), 7.0);
  // AMF3 call: AMF3 answer, the integer stays an integer.
  p = call(client::netconnection_request("Shop.find", args, true));
  EXPECT_TRUE(p.bodies[0].val.has_flag(amf::value::avmplus));
  EXPECT_EQ(p.bodies[0].val.as_object()->find("id")->kind(), amf::type::integer);
  // A bare method goes to the default service.
  const amf::value hi[] = {d.string("hi")};
  p = call(client::netconnection_request("echo", hi, false));
  EXPECT_EQ(p.bodies[0].val.as_string(), "hi");
}

// A one-body NetConnection request with `args` as the body's value bytes, as each client lays
// them out.
std::string netconnection_bytes(std::uint16_t version, std::string_view target,
                                std::string_view args) {
  std::string p{char(version >> 8), char(version & 0xff), 0, 0, 0, 1};
  p += {char(target.size() >> 8), char(target.size() & 0xff)};
  p += target;
  p += std::string("\x00\x02/1\xff\xff\xff\xff", 8);
  p += args;
  return p;
}

TEST_F(Gateway, AnswersInTheEncodingOfEachClientsLayout) {
  using namespace std::string_literals;
  struct layout {
    const char* client;
    std::uint16_t version;
    std::string args;
    bool amf3;
  };
  const layout layouts[] = {
      // Flash Player: a strict array, the switch before each argument (AMF3 int 7).
      {"Flash Player", 3, "\x0a\x00\x00\x00\x01\x11\x04\x07"s, true},
      // Apache Royale's AMFNetConnection: one switch, then an AMF3 array of the arguments.
      {"Royale", 3, "\x11\x09\x03\x01\x04\x07"s, true},
      // Ruffle: version 0, AMF0 arguments (the number 7.0).
      {"Ruffle", 0, "\x0a\x00\x00\x00\x01\x00\x40\x1c\x00\x00\x00\x00\x00\x00"s, false},
      // AMF0 arguments in a version-3 packet (Royale's AMF0NetConnection with encoding 3).
      {"AMF0 in version 3", 3, "\x0a\x00\x00\x00\x01\x00\x40\x1c\x00\x00\x00\x00\x00\x00"s, false},
  };
  for (const auto& l : layouts) {
    SCOPED_TRACE(l.client);
    amf::packet p = call(netconnection_bytes(l.version, "Shop.find", l.args));
    EXPECT_EQ(p.version, l.version);
    EXPECT_EQ(p.bodies.at(0).target, "/1/onResult");
    EXPECT_EQ(p.bodies[0].val.has_flag(amf::value::avmplus), l.amf3);
    const auto* o = p.bodies[0].val.as_object();
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(o->cls->alias, "com.example.Product");
    EXPECT_EQ(o->find("id")->to_double(), 7.0);
    EXPECT_EQ(o->find("id")->kind(), l.amf3 ? amf::type::integer : amf::type::number);
  }
  // The bytes: Royale echoing "hello" gets 11 06 0b "hello", not 02 00 05 "hello".
  const std::string hello = "\x11\x09\x03\x01\x06\x0bhello"s;
  call(netconnection_bytes(3, "EchoService.echo", hello));
  EXPECT_TRUE(last_.reply.body.ends_with("\x11\x06\x0bhello"s));
  // No arguments: Royale's empty array (11 09 01 01) and Flash Player's empty strict array
  // both get AMF3, faults included.
  for (const auto& none : {"\x11\x09\x01\x01"s, "\x0a\x00\x00\x00\x00"s}) {
    amf::packet p = call(netconnection_bytes(3, "Nope.x", none));
    EXPECT_EQ(p.bodies.at(0).target, "/1/onStatus");
    EXPECT_TRUE(p.bodies[0].val.has_flag(amf::value::avmplus));
  }
  amf::packet p = call(netconnection_bytes(0, "Nope.x", "\x0a\x00\x00\x00\x00"s));
  EXPECT_FALSE(p.bodies.at(0).val.has_flag(amf::value::avmplus));
}

TEST_F(Gateway, FaultsAsOnStatusWithDetailOnlyInDebug) {
  amf::packet p = call(client::netconnection_request("Shop.boom", {}, false));
  EXPECT_EQ(p.bodies[0].target, "/1/onStatus");
  auto* f = p.bodies[0].val.as_object();
  EXPECT_EQ(f->find("code")->as_string(), "Server.Processing");
  EXPECT_EQ(f->find("level")->as_string(), "error");
  EXPECT_EQ(f->find("details")->as_string(), "");
  cfg_.debug = true;
  p = call(client::netconnection_request("Shop.boom", {}, false));
  EXPECT_EQ(p.bodies[0].val.as_object()->find("details")->as_string(), "disk on fire");
  p = call(client::netconnection_request("Shop.refuse", {}, false));
  f = p.bodies[0].val.as_object();
  EXPECT_EQ(f->find("code")->as_string(), "Shop.Closed");
  EXPECT_EQ(f->find("description")->as_string(), "closed today");
  EXPECT_EQ(f->find("details")->as_string(), "come back tomorrow");
  p = call(client::netconnection_request("Nope.x", {}, false));
  EXPECT_EQ(p.bodies[0].val.as_object()->find("code")->as_string(), "Server.ResourceNotFound");
  EXPECT_EQ(last_.reply.faults, 1u);
}

TEST_F(Gateway, EveryMessageRunsEvenIfAnotherFails) {
  amf::document d;
  amf::value msgs[] = {
      client::flex_remoting(d, "Shop", "boom", {}, ""),
      client::flex_remoting(d, "EchoService", "echo", std::vector{d.string("still here")}, "")};
  amf::packet p = call(client::flex_request(msgs));
  ASSERT_EQ(p.bodies.size(), 2u);
  EXPECT_EQ(p.bodies[0].target, "/1/onStatus");
  EXPECT_EQ(p.bodies[1].target, "/2/onResult");
  auto err = amf::flex::read(p.bodies[0].val, doc_);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->kind, amf::flex::kind::error);
  EXPECT_EQ(err->fault_code, "Server.Processing");
  auto ack = amf::flex::read(p.bodies[1].val, doc_);
  EXPECT_EQ(ack->body.as_string(), "still here");
  EXPECT_EQ(ack->correlation_id, amf::flex::read(msgs[1], d)->message_id);
  EXPECT_EQ(last_.reply.messages, 2u);
  EXPECT_EQ(last_.reply.faults, 1u);
}

TEST_F(Gateway, FlexPingLoginLogoutAndAccessRules) {
  amf::document d;
  amf::packet p = call(client::flex_request(
      std::vector{client::flex_command(d, amf::flex::operation::client_ping, "")}));
  auto ack = amf::flex::read(p.bodies[0].val, doc_);
  ASSERT_TRUE(ack);
  const std::string dsid(ack->header("DSId").as_string());
  EXPECT_TRUE(amf::flex::uuid_bytes(dsid));
  // small_messages is off: not advertised (the client would then send small polls).
  EXPECT_TRUE(ack->header("DSMessagingVersion").is_undefined());
  EXPECT_TRUE(last_.new_session_id.empty());  // no session for an anonymous ping
  EXPECT_EQ(sessions_.size(), 0u);

  // Protected: refused without a login.
  p = call(
      client::flex_request(std::vector{client::flex_remoting(d, "Admin", "secret", {}, dsid)}));
  EXPECT_EQ(amf::flex::read(p.bodies[0].val, doc_)->fault_code, "Client.Authentication");

  // A bad login, then a good one: a session with the principal.
  p = call(client::flex_request(
      std::vector{client::flex_command(d, amf::flex::operation::login, dsid, "ann", "bad")}));
  auto refused = amf::flex::read(p.bodies[0].val, doc_);
  EXPECT_EQ(refused->fault_code, "Client.Authentication");
  EXPECT_EQ(refused->fault_string, "Invalid login for user \"ann\"");
  p = call(client::flex_request(
      std::vector{client::flex_command(d, amf::flex::operation::login, dsid, "ann", "pw")}));
  EXPECT_EQ(amf::flex::read(p.bodies[0].val, doc_)->body.as_string(), "success");
  const std::string sid = last_.new_session_id;
  ASSERT_FALSE(sid.empty());
  EXPECT_EQ(p.headers.at(0).name, "AppendToGatewayUrl");

  exchange ex;
  ex.session_id = sid;
  p = call(client::flex_request(std::vector{client::flex_remoting(d, "Admin", "secret", {}, dsid)}),
           ex);
  EXPECT_EQ(amf::flex::read(p.bodies[0].val, doc_)->body.as_string(), "42");

  exchange out;
  out.session_id = sid;
  call(client::flex_request(
           std::vector{client::flex_command(d, amf::flex::operation::logout, dsid)}),
       out);
  EXPECT_TRUE(out.session_ended);
  EXPECT_FALSE(sessions_.find(sid));
}

TEST_F(Gateway, SmallMessagesOnlyWhenEnabledAndNegotiated) {
  amf::document d;
  const amf::value ping_message = client::flex_command(d, amf::flex::operation::client_ping, "");
  const auto ping = client::flex_request(std::vector{ping_message});
  amf::packet p = call(ping);
  EXPECT_NE(p.bodies[0].val.as_object(), nullptr);  // full AcknowledgeMessage by default
  EXPECT_TRUE(last_.new_session_id.empty());

  cfg_.small_messages = true;
  p = call(ping);  // the ping carries DSMessagingVersion 1: the answer is already DSK
  const amf::external_node* e = p.bodies[0].val.as_external();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->cls->alias, "DSK");
  auto ack = amf::flex::read(p.bodies[0].val, doc_);
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->correlation_id, amf::flex::read(ping_message, d)->message_id);
  EXPECT_TRUE(amf::flex::uuid_bytes(ack->header("DSId").as_string()));
  EXPECT_EQ(ack->header("DSMessagingVersion").to_double(), 1.0);
  EXPECT_TRUE(last_.new_session_id.empty());  // anonymous: no server session for it
  EXPECT_EQ(sessions_.size(), 0u);
  // Later anonymous calls get full acks, which every Flex client reads too.
  p = call(client::flex_request(std::vector{
      client::flex_remoting(d, "EchoService", "echo", std::vector{d.string("full")}, "")}));
  EXPECT_NE(p.bodies[0].val.as_object(), nullptr);

  // A login that negotiates keeps it in the session it makes.
  p = call(client::flex_request(
      std::vector{client::flex_command(d, amf::flex::operation::login, "", "ann", "pw")}));
  ASSERT_NE(p.bodies[0].val.as_external(), nullptr);
  const std::string sid = last_.new_session_id;
  ASSERT_FALSE(sid.empty());
  exchange ex;
  ex.session_id = sid;
  p = call(client::flex_request(std::vector{client::flex_remoting(
               d, "EchoService", "echo", std::vector{d.string("small")}, "")}),
           ex);
  ASSERT_NE(p.bodies[0].val.as_external(), nullptr);
  EXPECT_EQ(amf::flex::read(p.bodies[0].val, doc_)->body.as_string(), "small");
  // Errors never go small.
  exchange again;
  again.session_id = sid;
  p = call(client::flex_request(std::vector{client::flex_remoting(d, "Shop", "boom", {}, "")}),
           again);
  EXPECT_NE(p.bodies[0].val.as_object(), nullptr);
}

TEST_F(Gateway, CredentialsHeaderLogsInForNetConnection) {
  amf::packet p = call(client::netconnection_request("Admin.secret", {}, false, "ann", "pw"));
  EXPECT_EQ(p.bodies[0].val.as_string(), "42");
  EXPECT_FALSE(last_.new_session_id.empty());
  p = call(client::netconnection_request("Admin.secret", {}, false, "ann", "nope"));
  EXPECT_EQ(p.bodies[0].val.as_object()->find("code")->as_string(), "Client.Authentication");
  // Open services still answer a refused login.
  p = call(
      client::netconnection_request("echo", std::vector{amf::value::integer(1)}, false, "x", "y"));
  EXPECT_EQ(p.bodies[0].target, "/1/onResult");
}

TEST_F(Gateway, UndecodablePacketsAre400WithTheOffset) {
  gateway gw = make_gateway();
  exchange ex;
  std::string body =
      client::netconnection_request("echo", std::vector{amf::value::integer(1)}, false);
  body[body.size() - 9] = '\x04';  // an AMF0 movieclip marker where the number starts
  run(gw, body, ex);
  EXPECT_EQ(ex.reply.status, 400u);
  EXPECT_EQ(ex.reply.body, "bad AMF packet: unknown type marker at byte " +
                               std::to_string(body.size() - 9) + "\n");
}

// Every corpus request, mutated many ways (bit flips, truncation, inserted and repeated
// bytes): the gateway answers 200 with a packet that decodes, or 400; never anything else.
TEST_F(Gateway, SurvivesMutatedRequests) {
  cfg_.small_messages = true;
  std::vector<std::string> seeds;
  for (const char* dir : {"/corpus/rocketamf/request", "/corpus/phpamf/Request/mock"}) {
    for (const auto& f :
         std::filesystem::directory_iterator(std::string(AMFGATE_SHARED_DIR) + dir)) {
      std::ifstream in(f.path(), std::ios::binary);
      seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  ASSERT_GE(seeds.size(), 10u);
  std::mt19937 rng(20261202);
  gateway gw = make_gateway();
  std::size_t answered = 0, refused = 0;
  for (const auto& seed : seeds) {
    for (int i = 0; i < 1500; ++i) {
      std::string m = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        const std::size_t at = rng() % m.size();
        switch (rng() % 4) {
          case 0:
            m[at] = static_cast<char>(m[at] ^ (1 << (rng() % 8)));
            break;
          case 1:
            m.resize(at);
            break;
          case 2:
            m.insert(at, 1, static_cast<char>(rng()));
            break;
          default:
            m.insert(at, m.substr(at, rng() % 16));
            break;
        }
      }
      exchange ex;
      ex.session_id = i % 3 == 0 ? "" : "0123456789abcdef0123456789abcdef";
      ASSERT_NO_THROW(run(gw, m, ex));
      if (ex.reply.status == 200) {
        amf::document d;
        amf::decode_error ec;
        amf::decode_packet(amf::as_bytes(ex.reply.body), d, ec);
        ASSERT_FALSE(ec) << ec.message();
        ++answered;
      } else {
        ASSERT_EQ(ex.reply.status, 400u);
        ++refused;
      }
    }
  }
  EXPECT_GT(answered, 100u);
  EXPECT_GT(refused, 100u);
}

}  // namespace
}  // namespace amfgate::server

namespace amfgate::client {
namespace {

TEST(Url, ParsesHostsPortsAndIPv6) {
  const auto v6 = url::parse("http://[::1]:8080/gateway;AMFGATESESSIONID=x?a=1");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, "8080");
  EXPECT_EQ(v6.target, "/gateway;AMFGATESESSIONID=x?a=1");
  const auto plain = url::parse("http://example.com");
  EXPECT_EQ(plain.host, "example.com");
  EXPECT_EQ(plain.port, "80");
  EXPECT_EQ(plain.target, "/");
  EXPECT_THROW(url::parse("https://example.com/"), std::invalid_argument);
  EXPECT_THROW(url::parse("http://[::1/"), std::invalid_argument);
}

}  // namespace
}  // namespace amfgate::client
