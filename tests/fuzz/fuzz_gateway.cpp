// libFuzzer target: whole requests through the gateway, in process (no sockets): decode,
// logins, sessions, access rules, echo and introspection, faults, encoding, and messaging
// (subscribes with subtopics and selectors, MULTI_SUBSCRIBE lists, sends with any header,
// timestamp and timeToLive, maxFrequency, resubscribes: gateway_seeds/messaging-*.amf start
// there), and Ruffle's shapes (anonymous Flex messages in AMF0, ECMA argument lists,
// Credentials headers: gateway_seeds/ruffle-*.amf). Every input is answered 200 with a packet
// that decodes and answers each body, or 400 or 413 with a reason.
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "../server/gateway_run.hpp"
#include "amf/packet.hpp"
#include "amfgate/services/builtin.hpp"

namespace {

using namespace amfgate;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

config::gateway_config settings() {
  config::gateway_config cfg;
  cfg.debug = true;
  cfg.small_messages = true;
  cfg.limits.max_response_bytes = 1 << 20;
  cfg.access["amfgate.Introspection"] = config::access_rule{true, {"admin"}};
  // Sends to a destination with subtopics and subscriptions with selectors are reachable;
  // polls never park (long-polling is off).
  cfg.messaging.destinations["news"].allow_subtopics = true;
  // Throttled at rates a fuzzing run passes: sends go through and are refused, by turns.
  cfg.messaging.destinations["news"].throttle_inbound = {1000, 100, "error"};
  // What Consumers receive: the newest of each subtopic on "news"; on "paced", what a
  // Consumer's maxFrequency holds back waits (gateway_seeds/messaging-frequency.amf).
  cfg.messaging.destinations["news"].throttle_outbound = {0, "conflate"};
  cfg.messaging.destinations["paced"].throttle_outbound = {1000, "buffer"};
  // Subscriptions kept after a DISCONNECT or a durable unsubscribe, resumed by a resubscribe
  // (gateway_seeds/messaging-resume.amf).
  cfg.messaging.resume_window = std::chrono::minutes(1);
  // Subscriptions that time out at once, told on the next poll, and a rights hook that
  // refuses the subtopic "closed" (gateway_seeds/messaging-rooms.amf).
  cfg.messaging.destinations["rooms"].allow_subtopics = true;
  cfg.messaging.destinations["rooms"].subscription_timeout = std::chrono::milliseconds(1);
  // Small bounds, so that inputs reach them.
  cfg.messaging.max_header_bytes = 4096;
  cfg.messaging.max_filters_per_subscription = 8;
  cfg.limits.max_decoded_bytes = 8 << 20;
  return cfg;
}

struct world {
  world()
      : sessions(64, std::chrono::minutes(1)),
        // SHA-256 with few rounds: a login attempt costs microseconds, not a fuzzing run.
        users({{"ann",
                "$5$rounds=1000$fuzzsalt$mHgO0SkrCLgPfQN0WzvafcDYfx8VQqxcrLH3/VCZqKC",
                {"admin"}}}),
        log(std::make_shared<spdlog::logger>("fuzz",
                                             std::make_shared<spdlog::sinks::null_sink_mt>())) {
    registry.publish_through(broker);
    registry.publisher().authorize(
        "rooms", [](const services::access_request& a) { return a.subtopic != "closed"; });
    services::add_echo_service(registry);
    services::add_introspection_service(registry);
    registry.freeze();
  }
  config::gateway_config cfg = settings();
  messaging::broker broker{cfg.messaging};
  services::registry registry;
  services::memory_session_store sessions;
  messaging::channel channel{broker, sessions, cfg.limits.max_response_bytes};
  services::user_table users;
  server::worker_pool pool{2, 64};
  server::metrics stats;
  std::shared_ptr<spdlog::logger> log;
  server::gateway gw{cfg, registry, channel, sessions, users, pool, stats, log};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static world* w = new world();  // never destroyed: its pool threads outlive main otherwise
  server::exchange ex;
  ex.client_address = "127.0.0.1:1";
  server::run(w->gw, std::string(reinterpret_cast<const char*>(data), size), ex);
  if (ex.reply.status == 400 || ex.reply.status == 413) return 0;
  if (ex.reply.status != 200) die("an answer other than 200, 400 or 413");
  amf::document doc;
  amf::decode_error ec;
  amf::decode_options opt;
  opt.classes = &w->registry.classes();
  opt.max_depth = w->cfg.limits.max_depth;
  const amf::packet in =
      amf::decode_packet(std::span(reinterpret_cast<const std::byte*>(data), size), doc, ec, opt);
  if (ec) die("answered 200, yet the request does not decode");
  // The answer read with the classes the gateway knows (an echoed Red5 ExternalizableClass
  // comes back as one), and the default depth: a reply wraps what the request held.
  amf::decode_options answer;
  answer.classes = opt.classes;
  const amf::packet out = amf::decode_packet(amf::as_bytes(ex.reply.body), doc, ec, answer);
  if (ec) die("the answer does not decode");
  if (out.bodies.size() != in.bodies.size()) die("not every body is answered");
  return 0;
}
