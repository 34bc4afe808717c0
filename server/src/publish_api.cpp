#include "amfgate/server/publish_api.hpp"

#include <spdlog/spdlog.h>

#include "amfgate/bridge/plain_json.hpp"
#include "amfgate/services/fault.hpp"
#include "amfgate/services/quote.hpp"

namespace amfgate::server {

namespace {

bool same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

http_reply json_reply(unsigned status, const bridge::ordered_json& j) {
  http_reply r;
  r.status = status;
  r.content_type = "application/json";
  r.body = j.dump(-1, ' ', false, bridge::ordered_json::error_handler_t::replace) + "\n";
  return r;
}

http_reply error_reply(unsigned status, std::string why) {
  return json_reply(status, {{"error", std::move(why)}});
}

}  // namespace

publish_api::publish_api(const config::publish_settings& cfg, std::size_t max_depth,
                         services::publisher& to, std::shared_ptr<spdlog::logger> log)
    : cfg_(cfg), max_depth_(max_depth), to_(to), log_(std::move(log)) {}

publish_api::token publish_api::check(const http_request& req) const {
  std::string_view a = req.authorization;
  if (a.size() < 7 || !std::equal(a.begin(), a.begin() + 7, "bearer ", [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == y;
      })) {
    return token::none;
  }
  a.remove_prefix(7);
  bool found = false;
  for (const auto& t : cfg_.tokens) found |= same(a, t);  // every one, whichever matches
  return found ? token::right : token::wrong;
}

http_reply publish_api::publish(std::string_view destination, const http_request& req) const {
  if (!media_type_is(req.content_type, "application/json")) {
    return error_reply(415, "expected Content-Type application/json");
  }
  const auto j = bridge::ordered_json::parse(req.body, nullptr, false);
  if (!j.is_object() || !j.contains("body")) {
    return error_reply(400,
                       "expected a JSON object {\"body\": ..., \"subtopic\": \"...\", "
                       "\"headers\": {...}}");
  }
  amf::document doc;
  std::string subtopic;
  std::vector<services::publisher::header> headers;
  amf::value body;
  try {
    for (const auto& [k, v] : j.items()) {
      if (k == "body") {
        body = bridge::from_plain(doc, v, {max_depth_, SIZE_MAX});
      } else if (k == "subtopic") {
        if (!v.is_string() && !v.is_null()) return error_reply(400, "subtopic: expected a string");
        if (v.is_string()) subtopic = v.get<std::string>();
      } else if (k == "headers") {
        if (!v.is_object()) return error_reply(400, "headers: expected an object");
        for (const auto& [name, h] : v.items()) {
          headers.emplace_back(name, bridge::from_plain(doc, h, {max_depth_, SIZE_MAX}));
        }
      } else {
        return error_reply(
            400, "unknown key " + services::quoted(k) + " (known: body, subtopic, headers)");
      }
    }
  } catch (const bridge::mapping_error& e) {
    return error_reply(400, e.what());
  }
  try {
    to_.publish(destination, body, subtopic, headers);
  } catch (const services::fault& f) {
    const bool unknown = f.code() == "Server.ResourceUnavailable" ||
                         std::string_view(f.what()).find("no destination") != std::string::npos;
    return error_reply(unknown ? 404 : 400, f.what());
  }
  log_->debug("published to {} from {} through {}", services::quoted(destination), req.client,
              cfg_.path);
  return json_reply(202, {{"published", true}});
}

}  // namespace amfgate::server
