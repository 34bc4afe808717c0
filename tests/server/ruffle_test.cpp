// What Ruffle 0.6.0 sends, replayed against a live daemon: its AMF0 writer drops the class of
// every object (a Flex message arrives as an anonymous object under target "null") and
// writes every AS3 Array as an ECMA array (keys "0".."n-1"), argument lists included. Also
// the Credentials rules that the same Flash-era applications rely on.
#include <gtest/gtest.h>

#include <initializer_list>
#include <list>
#include <memory>
#include <utility>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/packet.hpp"
#include "amfgate/services/auth.hpp"
#include "daemon.hpp"

namespace amfgate::test {
namespace {

using member_list = std::initializer_list<std::pair<std::string_view, amf::value>>;

// An object as Ruffle writes any object, a class instance too: anonymous.
amf::value anonymous(amf::document& doc, member_list members) {
  amf::object_node* o = doc.object();
  for (const auto& [name, v] : members) o->dynamic.push_back({doc.copy(name), v});
  return amf::value::of(o);
}

// An AS3 Array as Ruffle writes it: an ECMA array with keys "0".."n-1".
amf::value ecma(amf::document& doc, std::initializer_list<amf::value> items) {
  auto* a = doc.create<amf::array_node>(amf::type::ecma_array, doc.resource());
  for (const auto& v : items) a->assoc.push_back({doc.copy(std::to_string(a->assoc.size())), v});
  a->ecma_count = static_cast<std::uint32_t>(a->assoc.size());
  return amf::value::of(a);
}

std::string_view text(const amf::value* v) {
  return v && v->kind() == amf::type::string ? v->as_string() : std::string_view("<none>");
}

// A Flex application in Ruffle: one browser (a cookie jar), AMF0 packets of version 0.
class ruffle_client {
 public:
  explicit ruffle_client(const daemon& d) : http_(d.client()) {}

  // The Flex message types, in the shape of the issue's capture.
  amf::value ping(amf::document& doc) {
    return anonymous(doc,
                     {{"body", anonymous(doc, {})},
                      {"clientId", amf::value::null()},
                      {"correlationId", doc.string("")},
                      {"destination", doc.string("")},
                      {"headers", anonymous(doc, {{"DSId", doc.string(dsid_or_nil())},
                                                  {"DSMessagingVersion", amf::value::number(1)}})},
                      {"messageId", doc.string(amf::flex::new_uuid())},
                      {"operation", amf::value::number(5)},
                      {"timeToLive", amf::value::number(0)},
                      {"timestamp", amf::value::number(0)}});
  }
  amf::value command(amf::document& doc, amf::flex::operation op, std::string_view destination,
                     amf::value client_id = amf::value::null()) {
    return anonymous(doc,
                     {{"body", anonymous(doc, {})},
                      {"clientId", client_id},
                      {"correlationId", doc.string("")},
                      {"destination", doc.string(destination)},
                      {"headers", anonymous(doc, {{"DSId", doc.string(dsid_or_nil())},
                                                  {"DSEndpoint", doc.string("my-polling-amf")}})},
                      {"messageId", doc.string(amf::flex::new_uuid())},
                      {"operation", amf::value::number(static_cast<double>(op))},
                      {"timeToLive", amf::value::number(0)},
                      {"timestamp", amf::value::number(0)}});
  }
  amf::value remoting(amf::document& doc, std::string_view destination, std::string_view method,
                      amf::value args) {
    return anonymous(doc, {{"body", args},
                           {"clientId", amf::value::null()},
                           {"destination", doc.string(destination)},
                           {"headers", anonymous(doc, {{"DSId", doc.string(dsid_or_nil())},
                                                       {"DSEndpoint", doc.string("my-amf")}})},
                           {"messageId", doc.string(amf::flex::new_uuid())},
                           {"operation", doc.string(method)},
                           {"source", amf::value::null()},
                           {"timeToLive", amf::value::number(0)},
                           {"timestamp", amf::value::number(0)}});
  }
  amf::value async(amf::document& doc, std::string_view destination, amf::value body) {
    return anonymous(doc, {{"body", body},
                           {"clientId", amf::value::null()},
                           {"correlationId", doc.string("")},
                           {"destination", doc.string(destination)},
                           {"headers", anonymous(doc, {{"DSId", doc.string(dsid_or_nil())}})},
                           {"messageId", doc.string(amf::flex::new_uuid())},
                           {"timeToLive", amf::value::number(0)},
                           {"timestamp", amf::value::number(0)}});
  }

  // One message in a version-0 packet; the envelope is a strict array (or an ECMA array).
  amf::flex::message send(amf::value message, bool ecma_envelope = false) {
    amf::document doc;
    amf::packet p(doc.resource());
    p.version = 0;
    const amf::value envelope = ecma_envelope ? ecma(doc, {message}) : [&] {
      amf::array_node* a = doc.array(1);
      a->dense.push_back(message);
      return amf::value::of(a);
    }();
    p.bodies.push_back({"null", "/1", amf::unknown_length, envelope});
    std::string bytes;
    amf::encode_packet(p, bytes);
    const auto res = http_.post("/messagebroker/amf", bytes);
    EXPECT_EQ(res.status, 200u) << res.body;
    replies_.push_back(res.body);  // the reply's values view its bytes
    const amf::packet reply = amf::decode_packet(amf::as_bytes(replies_.back()), reply_doc_);
    auto m = amf::flex::read(reply.bodies.at(0).val, reply_doc_);
    if (!m) throw std::runtime_error("the reply is not a Flex message");
    return *m;
  }
  /// Channel.connect: the ping that gets the DSId.
  amf::flex::message connect() {
    amf::document doc;
    const auto ack = send(ping(doc));
    const amf::value id = ack.header("DSId");
    if (id.kind() == amf::type::string) dsid = id.as_string();
    return ack;
  }

  client::http_client& http() { return http_; }
  std::string dsid;

 private:
  std::string dsid_or_nil() const { return dsid.empty() ? "nil" : dsid; }
  client::http_client http_;
  std::list<std::string> replies_;
  amf::document reply_doc_;
};

std::string fault_text(const amf::flex::message& m) {
  return std::string(m.fault_code) + ": " + std::string(m.fault_string);
}

class Ruffle : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string hash = services::hash_password("pw");
    shared = std::make_unique<daemon>(
        R"("users": [{"name": "ann", "password": ")" + hash +
            R"(", "roles": ["admin"]}, {"name": "bob", "password": ")" + hash +
            R"(", "roles": ["user"]}], "access": {"UserService.getUser": {"authenticated": true}},
            "messaging": {"destinations": {"chat": {}}})",
        AMFGATE_TEST_DAEMON);
  }
  static void TearDownTestSuite() { shared.reset(); }
  static std::unique_ptr<daemon> shared;
};
std::unique_ptr<daemon> Ruffle::shared;

TEST_F(Ruffle, AnAnonymousPingConnectsWithoutSmallMessages) {
  ruffle_client app(*shared);
  const auto ack = app.connect();
  ASSERT_EQ(ack.kind, amf::flex::kind::acknowledge) << fault_text(ack);
  EXPECT_EQ(app.dsid.size(), 36u);
  // small_messages is off: not advertised, or the SDK would send polls Ruffle cannot write.
  EXPECT_TRUE(ack.header("DSMessagingVersion").is_undefined());
  // The envelope as an ECMA array too.
  amf::document doc;
  EXPECT_EQ(app.send(app.ping(doc), true).kind, amf::flex::kind::acknowledge);
}

TEST_F(Ruffle, ATypedPingIsNotOfferedSmallMessagesWhenTheyAreOff) {
  auto http = shared->client();
  amf::document doc;
  const auto res = http.post("/messagebroker/amf",
                             client::flex_request(std::vector{client::flex_command(
                                 doc, amf::flex::operation::client_ping, "")}));  // asks for 1.0
  const amf::packet p = amf::decode_packet(amf::as_bytes(res.body), doc);
  const auto ack = amf::flex::read(p.bodies.at(0).val, doc);
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->kind, amf::flex::kind::acknowledge);
  EXPECT_FALSE(p.bodies.at(0).val.as_external()) << "a small message (DSK)";
  EXPECT_TRUE(ack->header("DSMessagingVersion").is_undefined());
  EXPECT_EQ(ack->header("DSId").kind(), amf::type::string);
}

TEST_F(Ruffle, RemotingWithEcmaArgumentLists) {
  ruffle_client app(*shared);
  app.connect();
  amf::document doc;
  // echo("hi") answers "hi", not {"0": "hi"}.
  auto r = app.send(app.remoting(doc, "EchoService", "echo", ecma(doc, {doc.string("hi")})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  ASSERT_EQ(r.body.kind(), amf::type::string);
  EXPECT_EQ(r.body.as_string(), "hi");
  // No arguments: an empty ECMA array.
  r = app.send(app.remoting(doc, "UserService", "whoami", ecma(doc, {})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  EXPECT_EQ(r.body.as_string(), "anonymous");
  // An ECMA array inside the list is echoed as what it is: an associative array.
  const amf::value assoc = [&] {
    auto* a = doc.create<amf::array_node>(amf::type::ecma_array, doc.resource());
    a->assoc.push_back({"a", amf::value::number(1)});
    a->assoc.push_back({"b", doc.string("x")});
    return amf::value::of(a);
  }();
  r = app.send(app.remoting(doc, "EchoService", "echo", ecma(doc, {assoc})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  const amf::array_node* echoed = r.body.as_array();
  ASSERT_NE(echoed, nullptr);
  ASSERT_EQ(echoed->assoc.size(), 2u);
  EXPECT_EQ(echoed->assoc[0].name, "a");
  EXPECT_EQ(echoed->assoc[1].val.as_string(), "x");
}

TEST_F(Ruffle, TypedObjectsArriveAnonymousAndCollectionsGoBackAsArrays) {
  ruffle_client app(*shared);
  app.connect();
  amf::document doc;
  // A [RemoteClass] User as Ruffle writes it: no class name, roles an ECMA array.
  const amf::value user =
      anonymous(doc, {{"id", amf::value::number(41)},
                      {"name", doc.string("ann")},
                      {"email", amf::value::null()},
                      {"roles", ecma(doc, {doc.string("admin"), doc.string("user")})},
                      {"created", doc.date(1700000000000.0)}});
  auto r = app.send(app.remoting(doc, "UserService", "save", ecma(doc, {user})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  const amf::object_node* saved = r.body.as_object();
  ASSERT_NE(saved, nullptr);
  EXPECT_EQ(saved->cls->alias, "com.example.User");
  EXPECT_EQ(text(saved->find("name")), "ann");

  // list() returns an ArrayCollection; Ruffle drops a reply that holds one: an array.
  r = app.send(app.remoting(doc, "UserService", "list", ecma(doc, {})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  ASSERT_EQ(r.body.kind(), amf::type::array) << amf::type_name(r.body.kind());
  EXPECT_GE(r.body.as_array()->dense.size(), 1u);
  // Flash Player's typed request gets the ArrayCollection.
  auto http = shared->client();
  const auto res = http.post(
      "/messagebroker/amf",
      client::flex_request(std::vector{client::flex_remoting(doc, "UserService", "list", {}, "")}));
  const amf::packet p = amf::decode_packet(amf::as_bytes(res.body), doc);
  const auto typed = amf::flex::read(p.bodies.at(0).val, doc);
  ASSERT_TRUE(typed);
  ASSERT_NE(typed->body.as_external(), nullptr);
  EXPECT_EQ(typed->body.as_external()->cls->alias, "flex.messaging.io.ArrayCollection");
}

TEST_F(Ruffle, AMemberThatDoesNotFitIsNamedByItsPath) {
  ruffle_client app(*shared);
  amf::document doc;
  const amf::value bad_role =
      anonymous(doc, {{"id", amf::value::number(1)},
                      {"name", doc.string("x")},
                      {"roles", ecma(doc, {doc.string("a"), amf::value::number(5)})},
                      {"created", doc.date(0)}});
  auto r = app.send(app.remoting(doc, "UserService", "save", ecma(doc, {bad_role})));
  ASSERT_EQ(r.kind, amf::flex::kind::error);
  EXPECT_EQ(r.fault_string, "UserService.save: argument 1: roles[1]: expected string, got double");
  const amf::value null_name = anonymous(doc, {{"id", amf::value::number(1)},
                                               {"name", amf::value::null()},
                                               {"roles", ecma(doc, {})},
                                               {"created", doc.date(0)}});
  r = app.send(app.remoting(doc, "UserService", "save", ecma(doc, {null_name})));
  ASSERT_EQ(r.kind, amf::flex::kind::error);
  EXPECT_EQ(r.fault_string, "UserService.save: argument 1: name: expected string, got null");
}

TEST_F(Ruffle, ProducerAndConsumerOverPolling) {
  ruffle_client reader(*shared), writer(*shared);
  reader.connect();
  writer.connect();
  amf::document doc;
  const auto sub = reader.send(reader.command(doc, amf::flex::operation::subscribe, "chat",
                                              doc.string(amf::flex::new_uuid())));
  ASSERT_EQ(sub.kind, amf::flex::kind::acknowledge) << fault_text(sub);
  for (const char* word : {"one", "two", "three"}) {
    const auto ack = writer.send(writer.async(doc, "chat", doc.string(word)));
    ASSERT_EQ(ack.kind, amf::flex::kind::acknowledge) << fault_text(ack);
  }
  const auto poll = reader.send(reader.command(doc, amf::flex::operation::poll, ""));
  ASSERT_EQ(poll.kind, amf::flex::kind::command) << fault_text(poll);
  const amf::array_node* messages = poll.body.as_array();
  ASSERT_NE(messages, nullptr);
  std::vector<std::string> got;
  amf::document read_doc;
  for (const auto& v : messages->dense) {
    const auto m = amf::flex::read(v, read_doc);
    ASSERT_TRUE(m);
    got.emplace_back(m->body.as_string());
  }
  EXPECT_EQ(got, (std::vector<std::string>{"one", "two", "three"}));
  const auto unsub =
      reader.send(reader.command(doc, amf::flex::operation::unsubscribe, "chat", sub.client_id));
  ASSERT_EQ(unsub.kind, amf::flex::kind::acknowledge) << fault_text(unsub);
  writer.send(writer.async(doc, "chat", doc.string("after")));
  const auto empty = reader.send(reader.command(doc, amf::flex::operation::poll, ""));
  EXPECT_TRUE(empty.body.is_null() || empty.body.as_array()->dense.empty());
}

// NetConnection with a Credentials header, as Flash-era applications log in and out.
class credentials_client {
 public:
  explicit credentials_client(const daemon& d) : http(d.client()) {}
  // The caller's name (UserService.whoami), as the request is authenticated.
  std::string whoami(std::string_view user = {}, std::string_view password = {},
                     bool with_header = false) {
    std::string bytes = with_header || !user.empty()
                            ? credentials_request("UserService.whoami", user, password)
                            : client::netconnection_request("UserService.whoami", {}, false);
    const auto res = http.post("/gateway", bytes);
    amf::document doc;
    const amf::packet p = amf::decode_packet(amf::as_bytes(res.body), doc);
    const amf::value v = p.bodies.at(0).val;
    return v.kind() == amf::type::string ? std::string(v.as_string()) : "<fault>";
  }
  std::string session() const {
    auto it = http.cookies.find("AMFGATESESSIONID");
    return it == http.cookies.end() ? "" : it->second;
  }
  client::http_client http;

 private:
  // netconnection_request leaves the header out for an empty user: build it by hand.
  static std::string credentials_request(std::string_view target, std::string_view user,
                                         std::string_view password) {
    amf::document doc;
    amf::packet p(doc.resource());
    p.version = 0;
    p.headers.push_back(
        {"Credentials", false, amf::unknown_length,
         anonymous(doc, {{"userid", doc.string(user)}, {"password", doc.string(password)}})});
    p.bodies.push_back({target, "/1", amf::unknown_length, amf::value::of(doc.array())});
    std::string out;
    amf::encode_packet(p, out);
    return out;
  }
};

TEST_F(Ruffle, ACredentialsHeaderIsWhatTheRequestIsAuthenticatedAs) {
  credentials_client c(*shared);
  EXPECT_EQ(c.whoami(), "anonymous");
  EXPECT_EQ(c.whoami("ann", "pw"), "ann");
  const std::string first = c.session();
  ASSERT_FALSE(first.empty());
  // The same pair again keeps the session: no new login (a login always rotates it).
  EXPECT_EQ(c.whoami("ann", "pw"), "ann");
  EXPECT_EQ(c.session(), first);
  EXPECT_EQ(c.whoami(), "ann");  // the cookie alone

  // The same user with a wrong password: anonymous, and so is the session after it.
  EXPECT_EQ(c.whoami("ann", "wrong"), "anonymous");
  EXPECT_EQ(c.whoami(), "anonymous");

  // Another user with a wrong password, over a login: anonymous too.
  EXPECT_EQ(c.whoami("ann", "pw"), "ann");
  EXPECT_EQ(c.whoami("bob", "wrong"), "anonymous");
  EXPECT_EQ(c.whoami(), "anonymous");

  // Another user with the right password replaces the principal and rotates the session.
  EXPECT_EQ(c.whoami("ann", "pw"), "ann");
  const std::string ann_session = c.session();
  EXPECT_EQ(c.whoami("bob", "pw"), "bob");
  EXPECT_NE(c.session(), ann_session);
  EXPECT_EQ(c.whoami(), "bob");

  // Empty credentials: logout.
  EXPECT_EQ(c.whoami("", "", true), "anonymous");
  EXPECT_EQ(c.whoami(), "anonymous");
}

TEST_F(Ruffle, NetConnectionFaultsCarryMessage) {
  auto http = shared->client();
  amf::document doc;
  const auto res =
      http.post("/gateway", client::netconnection_request(
                                "UserService.getUser", std::vector{amf::value::number(1)}, false));
  const amf::packet p = amf::decode_packet(amf::as_bytes(res.body), doc);
  EXPECT_TRUE(p.bodies.at(0).target.ends_with("/onStatus"));
  const amf::object_node* status = p.bodies.at(0).val.as_object();
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(text(status->find("code")), "Client.Authentication");
  EXPECT_EQ(text(status->find("message")), text(status->find("description")));
  EXPECT_EQ(text(status->find("message")), "UserService.getUser requires a login");
}

TEST_F(Ruffle, AFlexLoginAfterANetConnectionLogin) {
  credentials_client c(*shared);
  ASSERT_EQ(c.whoami("ann", "pw"), "ann");
  amf::document doc;
  std::list<std::string> bodies;  // the replies' values view their bytes
  auto flex_login = [&](std::string_view user) {
    bodies.push_back(
        c.http
            .post("/messagebroker/amf", client::flex_request(std::vector{client::flex_command(
                                            doc, amf::flex::operation::login, "", user, "pw")}))
            .body);
    const amf::packet p = amf::decode_packet(amf::as_bytes(bodies.back()), doc);
    auto m = amf::flex::read(p.bodies.at(0).val, doc);
    if (!m) throw std::runtime_error("not a Flex message");
    return *m;
  };
  // The same user (ChannelSet.login in an application that set NetConnection credentials).
  auto r = flex_login("ann");
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  EXPECT_EQ(r.body.as_string(), "success");
  // Another user over a login: refused, as BlazeDS's LoginManager does (10054).
  r = flex_login("bob");
  ASSERT_EQ(r.kind, amf::flex::kind::error);
  EXPECT_EQ(r.fault_code, "Client.Authentication");
  EXPECT_EQ(r.fault_string,
            "Cannot re-authenticate in the same session: logged in as \"ann\"; log out first.");
  EXPECT_EQ(c.whoami(), "ann");
}

TEST(RuffleCollections, TheArrayRuleCanBeTurnedOff) {
  daemon d(R"("ruffle_collections_as_arrays": false)", AMFGATE_TEST_DAEMON);
  ruffle_client app(d);
  amf::document doc;
  const auto r = app.send(app.remoting(doc, "UserService", "list", ecma(doc, {})));
  ASSERT_EQ(r.kind, amf::flex::kind::acknowledge) << fault_text(r);
  ASSERT_NE(r.body.as_external(), nullptr);
  EXPECT_EQ(r.body.as_external()->cls->alias, "flex.messaging.io.ArrayCollection");
}

}  // namespace
}  // namespace amfgate::test
