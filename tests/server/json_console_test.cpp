// The JSON endpoint and the console's HTTP side against the real daemon (the page itself is
// tested in Chromium: tests/browser/console.mjs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "amfgate/services/auth.hpp"
#include "daemon.hpp"

namespace amfgate::test {
namespace {

using json = nlohmann::ordered_json;

// A daemon with the JSON endpoint and the console on, one admin user, and introspection
// guarded by the admin role.
std::string settings(const std::string& extra = "") {
  static const std::string hash = services::hash_password("pw");
  return R"("introspection": true, "json_endpoint": {"enabled": true},
      "console": {"enabled": true, "roles": ["admin"]},
      "limits": {"max_body_bytes": 65536, "max_depth": 32},
      "users": [{"name": "ann", "password": ")" +
         hash + R"(", "roles": ["admin"]}, {"name": "bob", "password": ")" + hash +
         R"(", "roles": []}], "access": {"amfgate.Introspection": {"roles": ["admin"]}})" + extra;
}

json body_of(const client::response& r) {
  return json::parse(r.body);
}

client::response post_json(client::http_client& http, const std::string& target,
                           const std::string& body) {
  return http.post(target, body, "application/json");
}

TEST(JsonEndpoint, CallsWithTypedJsonBothWays) {
  daemon d(settings());
  auto http = d.client();
  // Typed JSON in, the echo's AMF3 rendering out: an int stays an int, a date a date.
  const std::string value =
      R"({"name": "ann", "n": {"$int": 5}, "when": {"$date": 1700000000000.0},)"
      R"( "list": [1.5, "two", null, true]})";
  auto r = post_json(http, "/json/EchoService/echo", "[" + value + "]");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(body_of(r), json::parse(value));
  // Plain JSON reads as the obvious types: 7 is a double, and comes back as one.
  r = post_json(http, "/json/EchoService/echo", R"([7])");
  EXPECT_EQ(r.body, "7.0\n");
  // A typed object keeps its class.
  r = post_json(http, "/json/EchoService/echo",
                R"([{"$class": "com.example.Thing", "$sealed": ["id"], "$dynamic": false,)"
                R"( "id": {"$int": 3}}])");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(body_of(r)["$class"], "com.example.Thing");
  EXPECT_EQ(body_of(r)["id"], json::parse(R"({"$int": 3})"));
}

TEST(JsonEndpoint, FaultsCarryTheAmfCodeAndAStatus) {
  daemon d(settings());
  auto http = d.client();
  auto fault = [&](const std::string& target, const std::string& body, unsigned status,
                   const std::string& code) {
    const auto r = post_json(http, target, body);
    EXPECT_EQ(r.status, status) << target << " " << r.body;
    const json j = body_of(r);
    EXPECT_EQ(j.value("faultCode", ""), code) << r.body;
    return j.value("faultString", "");
  };
  EXPECT_EQ(fault("/json/Nope/find", "[]", 404, "Server.ResourceNotFound"),
            "no service named \"Nope\"");
  fault("/json/EchoService/nope", "[]", 404, "Server.ResourceUnavailable");
  EXPECT_NE(fault("/json/EchoService/echo", "[1.0, 2.0]", 400, "Server.ResourceUnavailable")
                .find("argument"),
            std::string::npos);
  EXPECT_EQ(fault("/json/amfgate.Introspection/listServices", "[]", 403, "Client.Authentication"),
            "amfgate.Introspection.listServices requires a login");
  EXPECT_TRUE(fault("/json/EchoService/echo", "[1,", 400, "Client.Message.Encoding")
                  .starts_with("bad arguments: "));
  fault("/json/EchoService/echo", R"({"a": 1})", 400, "Client.Message.Encoding");
  EXPECT_NE(fault("/json/EchoService/echo", R"([{"$int": "x"}])", 400, "Client.Message.Encoding")
                .find("/0"),
            std::string::npos);
  // Deeper than limits.max_depth (32): refused before the reader recurses.
  EXPECT_NE(fault("/json/EchoService/echo", std::string(40, '[') + std::string(40, ']'), 400,
                  "Client.Message.Encoding")
                .find("max_depth"),
            std::string::npos);
  EXPECT_EQ(http.post("/json/EchoService/echo", "[]", "text/plain").status, 415u);
  // Media types compare without case, parameters or the spaces before them (RFC 9110 8.3.1).
  EXPECT_EQ(http.post("/json/EchoService/echo", "[1]", "Application/JSON ; charset=utf-8").status,
            200u);
  EXPECT_EQ(http.get("/json/EchoService/echo").status, 405u);
  EXPECT_EQ(post_json(http, "/json/EchoService", "[]").status, 404u);
  EXPECT_EQ(post_json(http, "/json/EchoService/echo", "[" + std::string(70'000, ' ') + "]").status,
            413u);
}

TEST(JsonEndpoint, LoginsSessionsAndAccessRulesAreTheAmfSides) {
  daemon d(settings());
  auto http = d.client();
  const std::string list = "/json/amfgate.Introspection/listServices";
  auto r = post_json(http, "/json/login", R"({"user": "ann", "password": "wrong"})");
  EXPECT_EQ(r.status, 403u);
  EXPECT_EQ(body_of(r)["faultString"], "Invalid login for user \"ann\"");
  EXPECT_TRUE(http.cookies.empty());
  EXPECT_EQ(post_json(http, "/json/login", R"({"user": "ann"})").status, 400u);
  r = post_json(http, "/json/login", R"({"user": "ann", "password": "pw"})");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_NE(r.header("Set-Cookie").find("; HttpOnly"), std::string::npos);
  r = post_json(http, list, "[]");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_TRUE(body_of(r).is_array());
  // A user without the role is refused as an AMF client is.
  auto bob = d.client();
  ASSERT_EQ(post_json(bob, "/json/login", R"({"user": "bob", "password": "pw"})").status, 200u);
  r = post_json(bob, list, "[]");
  EXPECT_EQ(r.status, 403u);
  EXPECT_EQ(body_of(r)["faultCode"], "Client.Authorization");
  // Logout ends the session.
  EXPECT_EQ(post_json(http, "/json/logout", "").status, 200u);
  EXPECT_TRUE(http.cookies.empty());
  EXPECT_EQ(post_json(http, list, "[]").status, 403u);
}

TEST(JsonEndpoint, IsOffByDefault) {
  daemon d;
  auto http = d.client();
  EXPECT_EQ(post_json(http, "/json/EchoService/echo", R"(["x"])").status, 404u);
  EXPECT_EQ(http.get("/console").status, 404u);
}

TEST(Console, ThePageIsServedAndItsDataNeedsALoginWithTheRole) {
  daemon d(settings());
  auto http = d.client();
  auto page = http.get("/console");
  ASSERT_EQ(page.status, 200u);
  EXPECT_EQ(page.header("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page.header("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  EXPECT_NE(page.body.find("<script src=\"/console/console.js\""), std::string::npos);
  EXPECT_EQ(http.get("/console/console.js").header("Content-Type"),
            "text/javascript; charset=utf-8");
  EXPECT_EQ(http.get("/console/nothing.js").status, 404u);
  EXPECT_EQ(http.get("/console/services").status, 401u);
  EXPECT_EQ(post_json(http, "/console/decode", "").status, 401u);
  // bob has no admin role: still refused.
  auto bob = d.client();
  ASSERT_EQ(post_json(bob, "/console/login", R"({"user": "bob", "password": "pw"})").status, 200u);
  EXPECT_EQ(bob.get("/console/services").status, 401u);
  ASSERT_EQ(post_json(http, "/console/login", R"({"user": "ann", "password": "pw"})").status, 200u);
  const auto services = http.get("/console/services");
  ASSERT_EQ(services.status, 200u);
  bool echo = false;
  for (const auto& s : body_of(services)) {
    for (const auto& m : s["methods"]) {
      if (s["name"] == "EchoService" && m["name"] == "echo") {
        echo = true;
        EXPECT_EQ(m["parameters"].size(), 1u);
      }
    }
  }
  EXPECT_TRUE(echo) << services.body;
}

TEST(Console, CallsInEachEncodingAndDecodesWithOffsets) {
  daemon d(settings());
  auto http = d.client();
  ASSERT_EQ(post_json(http, "/console/login", R"({"user": "ann", "password": "pw"})").status, 200u);
  for (const char* encoding : {"amf0", "amf3", "flex"}) {
    SCOPED_TRACE(encoding);
    const auto r = post_json(http, "/console/call",
                             R"({"service": "EchoService", "method": "echo", "arguments": ["hi"],)"
                             R"( "encoding": ")" +
                                 std::string(encoding) + "\"}");
    ASSERT_EQ(r.status, 200u) << r.body;
    const json j = body_of(r);
    EXPECT_EQ(j["status"], 200);
    EXPECT_TRUE(j["millis"].is_number());
    EXPECT_EQ(j["request"].get<std::string>().substr(0, 4),
              std::string(encoding) == "amf0" ? "0000" : "0003");
    const json& body = j["response_packet"]["bodies"][0];
    if (std::string(encoding) == "flex") {
      EXPECT_EQ(body["value"]["$amf3"]["body"], "hi") << body.dump();
    } else if (std::string(encoding) == "amf3") {
      EXPECT_EQ(body["value"]["$amf3"], "hi") << body.dump();
    } else {
      EXPECT_EQ(body["value"], "hi") << body.dump();
    }
  }
  EXPECT_EQ(post_json(http, "/console/call", R"({"service": "EchoService"})").status, 400u);
  // A packet that decodes, and the same cut short: the reason and the offset.
  const std::string packet = client::netconnection_request("EchoService.echo", {}, false);
  auto r = http.post("/console/decode", packet, "application/octet-stream");
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(body_of(r)["packet"]["bodies"][0]["target"], "EchoService.echo");
  r = http.post("/console/decode", packet.substr(0, 9), "application/octet-stream");
  EXPECT_EQ(r.status, 422u);
  // 00 00 | 00 00 | 00 01 | 00 10 "EchoService.echo": the name's length runs past the end.
  EXPECT_EQ(body_of(r)["offset"], 6);
  EXPECT_EQ(body_of(r)["error"], "length larger than the input left at byte 6") << r.body;
}

}  // namespace
}  // namespace amfgate::test
