#include "amfgate/server/router.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/this_coro.hpp>

#include "amf/flex.hpp"
#include "amfgate/services/quote.hpp"
#include "log_sink.hpp"
#include "request_target.hpp"

namespace amfgate::server {

namespace net = boost::asio;

namespace {

std::string crossdomain_policy(const config::crossdomain_settings& c) {
  std::string xml =
      "<?xml version=\"1.0\"?>\n"
      "<!DOCTYPE cross-domain-policy SYSTEM "
      "\"http://www.adobe.com/xml/dtds/cross-domain-policy.dtd\">\n"
      "<cross-domain-policy>\n"
      "  <site-control permitted-cross-domain-policies=\"master-only\"/>\n";
  for (const auto& d : c.allow_domains) {
    xml += "  <allow-access-from domain=\"" + d + "\" secure=\"" + (c.secure ? "true" : "false") +
           "\"/>\n";
  }
  return xml + "</cross-domain-policy>\n";
}

// A Flex stream's frames as the body that the HTTP layer streams.
class flex_stream final : public body_stream {
 public:
  explicit flex_stream(std::unique_ptr<messaging::stream> frames) : frames_(std::move(frames)) {}
  net::awaitable<std::string_view> next() override { return frames_->next(); }
  void unwritten() override { frames_->unwritten(); }

 private:
  std::unique_ptr<messaging::stream> frames_;
};

}  // namespace

router::router(const config::gateway_config& cfg, gateway& gw, messaging::channel& channel,
               const services::registry& services, const metrics& m,
               services::session_store& sessions, worker_pool& workers,
               const bridge::bridge& bridged, std::shared_ptr<spdlog::logger> log)
    : cfg_(cfg),
      gateway_(gw),
      channel_(channel),
      metrics_(m),
      bridge_(bridged),
      sessions_(sessions),
      workers_(workers),
      log_(std::move(log)),
      json_(cfg, gw, services, log_),
      console_(services),
      publish_(cfg.publish, cfg.limits.max_depth, channel.messages(), log_) {
  if (cfg_.crossdomain) crossdomain_ = crossdomain_policy(*cfg_.crossdomain);
  if (cfg_.cors.allow_credentials) {
    // A cookie crosses origins only as SameSite=None, which browsers take with Secure only.
    cookie_attributes_ = "; Path=/; HttpOnly; SameSite=None; Secure";
  } else {
    cookie_attributes_ = "; Path=/; HttpOnly; SameSite=" + cfg_.sessions.cookie_same_site;
    if (cfg_.sessions.cookie_secure) cookie_attributes_ += "; Secure";
  }
  for (const auto& h : cfg_.cors.allow_headers) {
    cors_headers_ += (cors_headers_.empty() ? "" : ", ") + h;
  }
}

bool router::allow_origin(const http_request& req, http_reply& r) const {
  const auto& origins = cfg_.cors.allow_origins;
  if (origins.empty() || req.origin.empty()) return false;
  const bool listed = std::find(origins.begin(), origins.end(), req.origin) != origins.end();
  if (!listed && std::find(origins.begin(), origins.end(), "*") == origins.end()) {
    log_->debug("{} from origin {}: not in cors.allow_origins, answered without CORS headers",
                req.client, services::quoted(req.origin));
    return false;
  }
  r.headers.emplace_back("Access-Control-Allow-Origin", listed ? std::string(req.origin) : "*");
  if (cfg_.cors.allow_credentials)
    r.headers.emplace_back("Access-Control-Allow-Credentials", "true");
  r.headers.emplace_back("Access-Control-Allow-Methods", "POST");
  r.headers.emplace_back("Access-Control-Allow-Headers", cors_headers_);
  r.headers.emplace_back("Access-Control-Max-Age", std::to_string(cfg_.cors.max_age_s));
  r.headers.emplace_back("Vary", "Origin");
  return true;
}

std::string router::session_id(const http_request& req) const {
  auto id = param(req.cookie, cfg_.sessions.cookie);
  if (id.empty()) id = param(req.target, cfg_.sessions.cookie);
  return std::string(id.substr(0, 128));
}

exchange router::exchange_for(http_request& req) const {
  exchange ex;
  ex.client_address = req.client;
  ex.session_id = session_id(req);
  ex.on_wait = std::move(req.on_wait);
  ex.on_park = std::move(req.on_park);
  ex.memory = req.memory;
  return ex;
}

void router::session_cookie(const exchange& ex, http_reply& r) const {
  if (!ex.new_session_id.empty()) {
    r.headers.emplace_back("Set-Cookie",
                           cfg_.sessions.cookie + "=" + ex.new_session_id + cookie_attributes_);
  } else if (ex.session_ended) {
    r.headers.emplace_back("Set-Cookie",
                           cfg_.sessions.cookie + "=" + cookie_attributes_ + "; Max-Age=0");
  }
}

namespace {

// CORS lets a page on any site POST with a "simple" content type (a form's, text/plain, or
// none) and the user's cookie, without asking. The JSON endpoint and the console act on the
// session of that cookie, so they take only other types, which a page on another origin can
// send only after a preflight that CORS answers for the allowed origins alone.
bool cross_site_type(std::string_view type) {
  return type.empty() || media_type_is(type, "text/plain") ||
         media_type_is(type, "application/x-www-form-urlencoded") ||
         media_type_is(type, "multipart/form-data");
}

http_reply cross_site_refusal() {
  http_reply r;
  r.status = 415;
  r.body =
      "unsupported media type: a form or text/plain POST could come from a page on another "
      "site; send application/json\n";
  return r;
}

// 405 to a request of a path that `what` answers, which takes POST only.
http_reply post_only(std::string_view what) {
  http_reply r;
  r.status = 405;
  r.headers.emplace_back("Allow", "POST");
  r.body = "method not allowed: " + std::string(what) + " takes POST\n";
  return r;
}

}  // namespace

// POST /json/login, /json/logout, /json/<Service>/<method> (the service name may hold dots,
// the method none).
net::awaitable<http_reply> router::json_route(std::string_view path, http_request& req) {
  if (req.method != "POST") co_return post_only("the JSON endpoint");
  http_reply r;
  if (cross_site_type(req.content_type)) co_return cross_site_refusal();
  const std::string_view rest = path.substr(6);
  exchange ex = exchange_for(req);
  if (rest == "login") {
    r = co_await json_.login(req, ex);
  } else if (rest == "logout") {
    r = co_await json_.logout(ex);
  } else {
    const auto slash = rest.rfind('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
      r.status = 404;
      r.body = "not found: POST /json/<Service>/<method>\n";
      co_return r;
    }
    r = co_await json_.call(rest.substr(0, slash), rest.substr(slash + 1), req, ex);
  }
  r.messages = ex.reply.messages;
  r.faults = ex.reply.faults;
  session_cookie(ex, r);
  co_return r;
}

net::awaitable<bool> router::logged_in_with(const http_request& req,
                                            const std::vector<std::string>& roles) {
  const std::string id = session_id(req);
  if (id.empty()) co_return false;
  std::optional<services::session> s;
  try {
    s = co_await sessions_.async_find(id);
  } catch (const services::store_unavailable& e) {
    log_->warn("{}: {}", path_of(req.target), e.what());
    co_return false;
  }
  if (!s || !s->user) co_return false;
  if (roles.empty()) co_return true;
  for (const auto& role : roles) {
    if (s->user->has_role(role)) co_return true;
  }
  co_return false;
}

net::awaitable<http_reply> router::publish_route(std::string_view destination, http_request& req) {
  if (req.method != "POST") co_return post_only("publishing");
  http_reply r;
  const auto token = publish_.check(req);
  bool allowed = token == publish_api::token::right;
  if (!allowed && token == publish_api::token::none && !cfg_.publish.roles.empty()) {
    allowed = co_await logged_in_with(req, cfg_.publish.roles);
  }
  if (!allowed) {
    const bool asked = token != publish_api::token::none || !session_id(req).empty();
    log_->warn("publish to {} from {} refused: {}", services::quoted(destination), req.client,
               token == publish_api::token::wrong ? "a wrong token"
               : asked                            ? "a session without a publishing role"
                                                  : "no credentials");
    r.status = asked ? 403 : 401;
    if (!asked) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"amfgate publish\"");
    r.body = asked ? "not allowed to publish\n" : "publishing needs a token or a login\n";
    co_return r;
  }
  co_return publish_.publish(destination, req);
}

// The page and its files for anyone (it asks for a login itself); the services, calls and
// decodes, with users configured, for a session logged in with one of console.roles (any role
// if none); with no users configured the console is open (a development setup).
net::awaitable<http_reply> router::console_route(std::string_view path, http_request& req) {
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (get) {
    if (auto page = console_.asset(path)) co_return std::move(*page);
  }
  const bool login = path == "/console/login" || path == "/console/logout";
  const bool data =
      path == "/console/services" || path == "/console/call" || path == "/console/decode";
  http_reply r;
  if (!login && !data) {
    r.status = 404;
    r.body = "not found\n";
    co_return r;
  }
  const bool wants_get = path == "/console/services";
  if ((wants_get && !get) || (!wants_get && req.method != "POST")) {
    r.status = 405;
    r.headers.emplace_back("Allow", wants_get ? "GET, HEAD" : "POST");
    r.body = "method not allowed\n";
    co_return r;
  }
  if (req.method == "POST" && cross_site_type(req.content_type)) co_return cross_site_refusal();
  if (data && !cfg_.users.empty()) {
    bool allowed = co_await logged_in_with(req, cfg_.console.roles);
    if (!allowed) {
      r.status = 401;
      r.content_type = "application/json";
      r.body = std::string(R"({"faultCode": "Client.Authentication", "faultString": )") +
               (cfg_.console.roles.empty()
                    ? R"("the console needs a login"})"
                    : R"("the console needs a login with a role of console.roles"})") +
               "\n";
      co_return r;
    }
  }
  exchange ex = exchange_for(req);
  if (path == "/console/services") {
    r = console_.services();
  } else if (path == "/console/decode") {
    r = json_.decode(req);
  } else if (path == "/console/call") {
    r = co_await json_.trace(req, ex);
  } else if (path == "/console/login") {
    r = co_await json_.login(req, ex);
  } else {
    r = co_await json_.logout(ex);
  }
  session_cookie(ex, r);
  co_return r;
}

net::awaitable<http_reply> router::metrics_page() {
  std::optional<std::size_t> count;
  try {
    count = co_await sessions_.async_size();
  } catch (const services::store_unavailable& e) {
    log_->debug("/metrics: {}", e.what());
  }
  http_reply r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = metrics_.render(count, workers_.snapshot(), channel_.messages().snapshot(),
                           logging::dropped_lines());
  bridge_.render(r.body);
  co_return r;
}

net::awaitable<http_reply> router::stream_route(std::string_view command, http_request& req,
                                                http_reply r) {
  auto refuse = [&](unsigned status, std::string why) {
    r.status = status;
    r.body = std::move(why) + "\n";
    return std::move(r);
  };
  // BlazeDS BaseStreamingHTTPEndpoint: what is not a stream of this FlexClient is a 400.
  if (req.version < 11) co_return refuse(400, "streaming needs HTTP/1.1 (chunked encoding)");
  if (command != "open" && command != "close") {
    co_return refuse(400, "unknown streaming command \"" + services::escaped(command, 32) +
                              "\": expected open or close");
  }
  const auto dsid = param(req.body, "DSId");
  if (dsid.empty() || dsid == "nil") {
    co_return refuse(400,
                     "no DSId=<FlexClient id> in the body: connect the channel (a ping) first");
  }
  std::unique_ptr<messaging::stream> frames;
  std::optional<services::fault> refused;
  try {
    const auto session = session_id(req);
    const auto address = address_of(req.client);
    if (command == "close") {
      const bool closed = co_await channel_.close_stream(dsid, session, address);
      if (!closed) co_return refuse(400, "this FlexClient has no stream open");
      r.body.clear();
      co_return r;
    }
    frames = co_await channel_.open_stream(dsid, session, address, req.user_agent);
  } catch (const services::fault& f) {
    refused = f;
  }
  if (refused) {
    const auto& code = refused->code();
    co_return refuse(code == "Server.Busy" || code == "Server.Session.Unavailable" ? 503
                     : code == "Client.Authorization"                              ? 403
                                                                                   : 400,
                     refused->what());
  }
  r.content_type = "application/x-amf";
  r.headers.emplace_back("Cache-Control", "no-cache, no-store, must-revalidate");
  r.headers.emplace_back("Pragma", "no-cache");
  r.stream = std::make_shared<flex_stream>(std::move(frames));
  co_return r;
}

net::awaitable<http_reply> router::amf_route(http_request& req, http_reply r) {
  exchange ex = exchange_for(req);
  ex.reply = std::move(r);
  co_await gateway_.handle(std::move(req.body), ex);
  session_cookie(ex, ex.reply);
  co_return std::move(ex.reply);
}

namespace {
net::awaitable<http_reply> answered(http_reply r) {
  co_return r;
}
}  // namespace

// Not a coroutine: it picks the one that answers. (A coroutine here kept a frame of 1.4 KB, a
// temporary per answer; Asio recycles frames of 1 KB at most, and one that it cannot recycle
// also evicts one that it could.)
net::awaitable<http_reply> router::route(http_request& req) {
  const auto path = path_of(req.target);
  http_reply r;
  // An answer made here, as a coroutine that returns it at once.
  auto text = [&](unsigned status, std::string body) {
    r.status = status;
    r.body = std::move(body);
    return answered(std::move(r));
  };
  // publish.listen: its address serves the publish endpoint alone, and `listen` does not.
  const bool publish_here =
      cfg_.publish.enabled && (req.listener == 1) == bool(cfg_.publish.listen);
  if (req.listener == 1 && !path.starts_with(cfg_.publish.path)) {
    return text(404, "not found: this address serves " + cfg_.publish.path + "<destination>\n");
  }
  const bool gateway_path = std::find(cfg_.gateway_paths.begin(), cfg_.gateway_paths.end(), path) !=
                            cfg_.gateway_paths.end();
  if (gateway_path) {
    // Every answer to an allowed origin carries the CORS headers, refusals included, so that
    // a page can read why it was refused.
    const bool allowed = allow_origin(req, r);
    if (req.method == "OPTIONS" && cfg_.cors.enabled()) {
      if (!allowed) return text(403, "origin not allowed here (cors.allow_origins)\n");
      r.content_type = {};
      return text(204, {});  // the preflight
    }
    if (req.method != "POST") {
      r.headers.emplace_back("Allow", cfg_.cors.enabled() ? "POST, OPTIONS" : "POST");
      return text(405, "method not allowed: AMF gateways take POST\n");
    }
    if (const auto command = param(req.target, "command"); !command.empty()) {
      return stream_route(command, req, std::move(r));
    }
    if (!media_type_is(req.content_type, "application/x-amf")) {
      return text(415, "unsupported media type: expected application/x-amf\n");
    }
    return amf_route(req, std::move(r));
  }
  if (path.starts_with("/json/") && cfg_.json_endpoint.enabled) {
    return json_route(path, req);
  }
  if ((path == "/console" || path.starts_with("/console/")) && cfg_.console_enabled()) {
    return console_route(path, req);
  }
  if (publish_here && path.starts_with(cfg_.publish.path)) {
    return publish_route(path.substr(cfg_.publish.path.size()), req);
  }
  const bool known = path == "/crossdomain.xml" || path == "/healthz" || path == "/metrics";
  if (!known) return text(404, "not found\n");
  if (req.method != "GET" && req.method != "HEAD") {
    r.headers.emplace_back("Allow", "GET, HEAD");
    return text(405, "method not allowed\n");
  }
  if (path == "/healthz") {
    return draining_ ? text(503, "draining\n") : text(200, "ok\n");
  }
  if (path == "/metrics") return metrics_page();
  if (crossdomain_.empty()) {
    if (!crossdomain_hint_logged_.exchange(true)) {
      log_->info(
          "GET /crossdomain.xml: no policy configured, answering 404 (set \"crossdomain\" "
          "in the config to serve one)");
    }
    return text(404, "no cross-domain policy configured\n");
  }
  r.content_type = "text/x-cross-domain-policy";
  return text(200, crossdomain_);
}

}  // namespace amfgate::server
