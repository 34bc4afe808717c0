#include "amfgate/config.hpp"

#include "amfgate/service_settings.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

namespace amfgate::config {
namespace {

std::vector<std::string> errors_of(const std::string& json) {
  try {
    parse(json);
  } catch (const error& e) {
    return e.errors();
  }
  return {};
}

TEST(Config, DefaultsNeedNoFile) {
  const gateway_config c = parse("{}");
  EXPECT_EQ(c.listen.port, 8080);
  EXPECT_EQ(c.limits.max_body_bytes, 16u << 20);
  EXPECT_EQ(c.gateway_paths, (std::vector<std::string>{"/gateway", "/messagebroker/amf"}));
  EXPECT_EQ(c.default_service, "EchoService");
  EXPECT_FALSE(c.crossdomain);
  EXPECT_FALSE(c.introspection_enabled());
}

TEST(Config, OverridesAnyPart) {
  const gateway_config c = parse(R"({"listen": {"port": 9000}, "debug": true,
      "limits": {"idle_timeout_ms": 500}, "crossdomain": {"allow_domains": ["*.example.com"]},
      "access": {"UserService": {"roles": ["user"]}}})");
  EXPECT_EQ(c.listen.port, 9000);
  EXPECT_EQ(c.listen.address, "0.0.0.0");
  EXPECT_EQ(c.limits.idle_timeout, milliseconds(500));
  EXPECT_EQ(c.limits.read_timeout, milliseconds(30'000));
  EXPECT_TRUE(c.introspection_enabled());
  ASSERT_TRUE(c.crossdomain);
  EXPECT_EQ(c.access.at("UserService").roles, std::vector<std::string>{"user"});
}

TEST(Config, EveryErrorNamesItsPathAndAllAreReported) {
  const auto e = errors_of(R"({"listen": {"port": "80a"}, "limits": {"max_conections": 5},
      "users": [{"name": "x", "password": "plain"}], "log": {"level": "loud"},
      "gateway_paths": ["gateway"], "threads": -1})");
  // In the order that --print-config prints the keys, whatever their order in the file.
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0], "/listen/port: expected an integer from 0 to 65535, got \"80a\"");
  EXPECT_EQ(e[1], "/threads: expected an integer from 0 to 256, got -1");
  EXPECT_EQ(e[2], "/gateway_paths/0: expected a path starting with /, got \"gateway\"");
  EXPECT_TRUE(e[3].starts_with("/limits/max_conections: unknown key")) << e[3];
  EXPECT_TRUE(e[4].starts_with("/log/level: expected one of trace, debug")) << e[4];
  EXPECT_TRUE(e[5].starts_with("/users/0/password: expected a crypt(3) hash")) << e[5];
  EXPECT_EQ(errors_of("[1]"), std::vector<std::string>{"/: expected an object, got [1]"});
  EXPECT_TRUE(errors_of("{").at(0).starts_with("/: not JSON"));
}

TEST(Config, RedisSessionStore) {
  const gateway_config c = parse(R"({"sessions": {"store": "redis", "idle_timeout_ms": 60000,
      "redis": {"host": "redis", "port": 6380, "key_prefix": "game:"}}})");
  EXPECT_EQ(c.sessions.store, "redis");
  EXPECT_EQ(c.sessions.redis.host, "redis");
  EXPECT_EQ(c.sessions.redis.port, 6380);
  EXPECT_EQ(c.sessions.redis.key_prefix, "game:");
  EXPECT_EQ(c.sessions.redis.command_timeout, milliseconds(500));
  const auto e = errors_of(R"({"sessions": {"store": "memcached", "redis": {"db": 99}}})");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], "/sessions/store: expected one of memory, redis, got \"memcached\"");
  EXPECT_EQ(e[1], "/sessions/redis/db: expected an integer from 0 to 15, got 99");
}

TEST(Config, EachServiceReadsItsOwnSectionWithPathNamedErrors) {
  const gateway_config c = parse(R"({"services": {"ContactService": {"database": "/var/lib/c.db",
      "max_results": 50, "readonly": "yes", "colour": 1}}})");
  service_settings s(c, "ContactService");
  EXPECT_EQ(s.string("database", "contacts.db"), "/var/lib/c.db");
  EXPECT_EQ(s.integer("max_results", 100, 1, 1000), 50);
  EXPECT_EQ(s.integer("page", 20, 1, 1000), 20);  // absent: the service's default
  EXPECT_TRUE(s.boolean("readonly", true));       // wrong type: the default, and an error
  s.fail("database", "cannot be opened");
  try {
    s.check();
    FAIL() << "check() passed a section with errors";
  } catch (const error& e) {
    EXPECT_EQ(e.errors(), (std::vector<std::string>{
                              "/services/ContactService/readonly: expected true or false, got "
                              "\"yes\"",
                              "/services/ContactService/database: cannot be opened",
                              "/services/ContactService/colour: unknown key"}));
  }
  service_settings none(c, "Other");
  EXPECT_TRUE(none.json().empty());
  EXPECT_NO_THROW(none.check());
  service_settings big(parse(R"({"services": {"X": {"n": 18446744073709551615}}})"), "X");
  EXPECT_EQ(big.integer("n", 7, -1, 10), 7);
  EXPECT_THROW(big.check(), error);
  EXPECT_EQ(errors_of(R"({"services": {"X": 5}})"),
            std::vector<std::string>{
                "/services/X: expected an object (the service's own settings), got 5"});
  // --print-config shows the sections as they were given.
  EXPECT_NE(to_json_text(c).find("\"max_results\": 50"), std::string::npos);
}

TEST(Config, CorsOriginsAreOriginsAndStarGoesWithoutCredentials) {
  const gateway_config c = parse(R"({"cors": {"allow_origins": ["https://app.example.com",
      "http://localhost:8000"], "allow_credentials": true}})");
  EXPECT_TRUE(c.cors.enabled());
  // A named object: g++ 12 at -O2 takes a temporary gateway_config here for one whose
  // strings may be used uninitialized (-Wmaybe-uninitialized, a false positive).
  const gateway_config defaults;
  EXPECT_FALSE(defaults.cors.enabled());
  EXPECT_EQ(c.cors.allow_headers, std::vector<std::string>{"Content-Type"});
  const auto e = errors_of(R"({"cors": {"allow_origins": ["*", "https://app.example.com/",
      "app.example.com", "HTTPS://APP"], "allow_credentials": true,
      "allow_headers": ["X Trace"]}})");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_TRUE(e[0].starts_with("/cors/allow_origins/0: \"*\" cannot go with")) << e[0];
  EXPECT_TRUE(e[1].starts_with("/cors/allow_origins/1: expected \"*\" or an origin")) << e[1];
  EXPECT_TRUE(e[2].starts_with("/cors/allow_origins/2: expected")) << e[2];
  EXPECT_TRUE(e[3].starts_with("/cors/allow_origins/3: expected")) << e[3];
  EXPECT_EQ(e[4], "/cors/allow_headers/0: expected a header name, got \"X Trace\"");
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(Config, MessagingDestinations) {
  const gateway_config c = parse(R"({"messaging": {"poll_wait_ms": 20000,
      "resume_window_ms": 300000, "destinations": {
      "chat": {"allow_subtopics": true, "send": {"roles": ["user"]}, "message_ttl_ms": 5000,
               "retention": {"max_messages": 50},
               "throttle_inbound": {"max_client_frequency": 5, "policy": "ignore"},
               "throttle_outbound": {"max_client_frequency": 20, "policy": "conflate"}},
      "ticks": {}}}})");
  EXPECT_EQ(c.messaging.poll_wait, milliseconds(20'000));
  EXPECT_EQ(c.messaging.resume_window, milliseconds(300'000));
  EXPECT_EQ(parse("{}").messaging.resume_window, milliseconds(0));  // off unless set
  const destination_settings& chat = c.messaging.destinations.at("chat");
  EXPECT_TRUE(chat.allow_subtopics);
  EXPECT_EQ(chat.subtopic_separator, ".");
  ASSERT_TRUE(chat.send);
  EXPECT_EQ(chat.send->roles, std::vector<std::string>{"user"});
  EXPECT_FALSE(chat.subscribe);  // anyone
  EXPECT_EQ(chat.message_ttl, milliseconds(5000));
  EXPECT_EQ(chat.max_messages, 50u);
  EXPECT_EQ(chat.max_bytes, std::size_t{1} << 20);
  EXPECT_EQ(chat.throttle_inbound.max_frequency, 0u);  // no bound
  EXPECT_EQ(chat.throttle_inbound.max_client_frequency, 5u);
  EXPECT_EQ(chat.throttle_inbound.policy, "ignore");
  EXPECT_EQ(chat.throttle_outbound.max_client_frequency, 20u);
  EXPECT_EQ(chat.throttle_outbound.policy, "conflate");
  EXPECT_EQ(c.messaging.destinations.at("ticks").throttle_outbound.max_client_frequency, 0u);
  EXPECT_EQ(c.messaging.destinations.at("ticks").throttle_outbound.policy, "buffer");
  EXPECT_FALSE(c.messaging.destinations.at("ticks").allow_subtopics);
  EXPECT_EQ(c.messaging.destinations.at("ticks").throttle_inbound.policy, "error");
  // What parses prints back as it was read.
  EXPECT_EQ(to_json_text(parse(to_json_text(c))), to_json_text(c));

  EXPECT_EQ(errors_of(R"({"messaging": {"destinations": {"d": {"retention": {"max_messages": 0},
      "subtopic_separator": "", "subscribe": {"role": ["x"]},
      "throttle_inbound": {"policy": "drop"}, "throttle_outbound": {"policy": "error"}}},
      "max_parked": -1}})"),
            (std::vector<std::string>{
                "/messaging/max_parked: expected an integer from 0 to 10000000, got -1",
                "/messaging/destinations/d/subscribe/role: unknown key (known here: "
                "authenticated, roles)",
                "/messaging/destinations/d/retention/max_messages: expected an integer from 1 "
                "to 10000000, got 0",
                "/messaging/destinations/d/throttle_inbound/policy: expected one of error, "
                "ignore, got \"drop\"",
                "/messaging/destinations/d/throttle_outbound/policy: expected one of buffer, "
                "conflate, ignore, got \"error\"",
                "/messaging/destinations/d/subtopic_separator: expected a separator (not empty, "
                "no '*'), got \"\""}));
}

TEST(Config, UpstreamsBridgeAndPublish) {
  const gateway_config c = parse(R"({"upstreams": {"crm": {"url": "unix:/run/app.sock",
      "mapping": "typed", "max_connections": 4}}, "bridge": {"UserService": "crm",
      "Orders.place": "crm"}, "messaging": {"destinations": {"chat": {"forward": "crm",
      "authorize": "crm", "subscription_timeout_ms": 60000}}},
      "publish": {"enabled": true, "tokens": ["0123456789abcdef"]}})");
  EXPECT_EQ(c.upstreams.at("crm").mapping, "typed");
  EXPECT_EQ(c.upstreams.at("crm").max_inflight, 64u);
  EXPECT_EQ(c.bridge.at("Orders.place"), "crm");
  EXPECT_EQ(c.messaging.destinations.at("chat").forward, "crm");
  EXPECT_EQ(c.messaging.destinations.at("chat").authorize, "crm");
  EXPECT_EQ(c.messaging.destinations.at("chat").subscription_timeout.count(), 60000);
  EXPECT_EQ(to_json_text(parse(to_json_text(c))), to_json_text(c));

  EXPECT_EQ(errors_of(R"({"upstreams": {"a": {"url": "ftp://x", "max_connections": 8,
      "max_inflight": 2}}, "bridge": {"S": "b", ".m": "a"},
      "messaging": {"destinations": {"d": {"forward": "c", "authorize": "e"}}},
      "publish": {"enabled": true, "tokens": ["short"]}})"),
            (std::vector<std::string>{
                "/upstreams/a/url: expected http://host[:port]/path/, https://..., "
                "unix:/path.sock or http://unix:/path.sock:/path/, got \"ftp://x\"",
                "/upstreams/a/max_inflight: expected at least max_connections (8), got 2",
                "/bridge/.m: expected a target \"Service\" or \"Service.method\", got \".m\"",
                "/bridge/S: expected the name of an upstream, got \"b\"",
                "/messaging/destinations/d/forward: expected the name of an upstream, got \"c\"",
                "/messaging/destinations/d/authorize: expected the name of an upstream, got "
                "\"e\"",
                "/publish/tokens/0: expected a token of at least 16 characters, got \"*****\""}));
  EXPECT_EQ(errors_of(R"({"publish": {"enabled": true}})"),
            std::vector<std::string>{"/publish/enabled: publishing needs \"tokens\" or "
                                     "\"roles\": it is never open to anyone"});
}

TEST(Config, MessagingHasAStoreOfItsOwn) {
  const gateway_config defaults;
  EXPECT_EQ(defaults.messaging_store(), "memory");
  EXPECT_EQ(parse(R"({"sessions": {"store": "redis"}})").messaging_store(), "redis");  // unset
  EXPECT_EQ(parse(R"({"sessions": {"store": "redis"}, "messaging": {"store": "memory"}})")
                .messaging_store(),
            "memory");
  EXPECT_EQ(parse(R"({"messaging": {"store": "redis"}})").messaging_store(), "redis");
  EXPECT_EQ(errors_of(R"({"messaging": {"store": "disk"}})"),
            std::vector<std::string>{
                "/messaging/store: expected \"memory\", \"redis\" or null (as sessions.store), "
                "got \"disk\""});
}

TEST(Config, ShippedFilesParseAndTheDefaultsFileIsTheDefaults) {
  EXPECT_EQ(read(AMFGATE_SOURCE_DIR "/config/amfgate.json"), defaults_json());
  // The compose stack's config (docker/amfgate.json) is what the deployment test runs.
  const gateway_config compose = load(AMFGATE_SOURCE_DIR "/docker/amfgate.json");
  EXPECT_EQ(compose.sessions.store, "redis");
  const gateway_config example = load(AMFGATE_SOURCE_DIR "/config/example.json");
  EXPECT_EQ(example.users.size(), 2u);
  EXPECT_TRUE(example.crossdomain);
  EXPECT_THROW(load("/nonexistent/amfgate.json"), error);
}

// Every key --print-config shows is one that parses back to the same settings, and is
// documented: the README's table or a page of docs/ names it.
TEST(Config, EveryKeyPrintedParsesBackAndIsDocumented) {
  gateway_config c = load(AMFGATE_SOURCE_DIR "/config/example.json");
  c.sessions.store = "redis";
  c.upstreams["crm"].url = "http://127.0.0.1:5000/amf/";
  c.bridge["UserService"] = "crm";
  const std::string printed = to_json_text(c);
  EXPECT_EQ(to_json_text(parse(printed)), printed);

  std::string docs = read(AMFGATE_SOURCE_DIR "/README.md");
  for (const auto& page : std::filesystem::directory_iterator(AMFGATE_SOURCE_DIR "/docs")) {
    if (page.path().extension() == ".md") docs += read(page.path().string());
  }
  // Names under these keys are the user's own (services, users, rules), not settings.
  const std::set<std::string> named_by_user = {"/access",
                                               "/services",
                                               "/users",
                                               "/bridge",
                                               "/limits/call_timeouts",
                                               "/messaging/destinations"};
  std::vector<std::string> undocumented;
  std::function<void(const nlohmann::json&, const std::string&)> walk =
      [&](const nlohmann::json& j, const std::string& path) {
        if (!j.is_object() || named_by_user.count(path)) return;
        for (const auto& [key, value] : j.items()) {
          if (docs.find(key) == std::string::npos) undocumented.push_back(path + "/" + key);
          walk(value, path + "/" + key);
        }
      };
  walk(nlohmann::json::parse(printed), "");
  EXPECT_EQ(undocumented, std::vector<std::string>{});
}

}  // namespace
}  // namespace amfgate::config
