#include "amfgate/bridge/bridge.hpp"

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "amf/flex.hpp"
#include "amf/json.hpp"
#include "amfgate/bridge/plain_json.hpp"
#include "amfgate/services/quote.hpp"

namespace amfgate::bridge {

namespace net = boost::asio;
using services::fault;

namespace {

// What a backend may key per-session state on, and cannot present as the cookie: the first
// 128 bits of the SHA-256 of the session id, in hex.
std::string pseudonym(std::string_view session_id) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(session_id.data(), session_id.size(), digest, &n, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < 16 && i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

// A method name as it may go into a URL path: an ActionScript identifier.
bool method_name(std::string_view m) {
  return !m.empty() && m.size() <= 128 && std::all_of(m.begin(), m.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
  });
}

ordered_json user_json(const services::principal* user) {
  if (!user) return nullptr;
  return ordered_json{{"name", user->name}, {"roles", user->roles}};
}

// What a backend wrote, cut as the daemon's own faults quote what they did not write.
std::string cut(const ordered_json& j, std::size_t max) {
  const std::string s = j.is_string() ? j.get<std::string>() : j.is_null() ? "" : j.dump();
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

// A call's or a forward's values in its upstream's mapping, all of them within one budget of
// max_request_bytes. Throws mapping_error or amf::json::error.
class renderer {
 public:
  renderer(const config::upstream_settings& s, std::size_t max_depth)
      : typed_(s.mapping == "typed"),
        typed_writer_(s.max_request_bytes),
        plain_writer_({max_depth, s.max_request_bytes}) {}
  ordered_json operator()(const amf::value& v) {
    return typed_ ? typed_writer_.amf3(v) : plain_writer_.render(v);
  }

 private:
  bool typed_;
  amf::json::writer typed_writer_;
  plain_writer plain_writer_;
};

}  // namespace

bridge::bridge(const config::gateway_config& cfg) : cfg_(cfg) {
  std::vector<std::string> errors;
  for (const auto& [name, u] : cfg.upstreams) {
    try {
      endpoint::parse(u.url);
    } catch (const std::invalid_argument& e) {
      errors.push_back("/upstreams/" + name + "/url: " + e.what());
    }
  }
  if (!errors.empty()) throw config::error(errors);
}

bridge::~bridge() = default;

void bridge::start(std::shared_ptr<spdlog::logger> log, net::any_io_executor io) {
  log_ = std::move(log);
  io_ = std::move(io);
  for (const auto& [name, u] : cfg_.upstreams) {
    upstreams_[name].up = std::make_unique<upstream>(name, u, cfg_.limits.max_response_bytes, log_);
    log_->info("upstream {} at {} ({} JSON, at most {} connections)", name, u.url, u.mapping,
               u.max_connections);
  }
}

void bridge::stop() {
  for (const auto& [name, t] : upstreams_) t.up->close();
}

upstream& bridge::started(std::string_view upstream_name) {
  const auto it = upstreams_.find(upstream_name);
  if (it == upstreams_.end()) throw std::logic_error("the bridge has not started");
  return *it->second.up;
}

void bridge::bind(services::registry& r) {
  for (const auto& [name, d] : cfg_.messaging.destinations) {
    if (d.authorize.empty()) continue;
    r.publisher().authorize(name, [this, upstream_name = d.authorize](services::access_request a) {
      return authorize(started(upstream_name), a);
    });
  }
  for (const auto& [target, name] : cfg_.bridge) {
    services::method m;
    m.how = services::execution::coroutine;
    m.parameters = {"*"};
    m.result = "* (upstream " + name + ")";
    m.invoke_async = [this, upstream_name = name](services::call_context& ctx,
                                                  std::span<const amf::value> args) {
      return call(started(upstream_name), ctx, args);
    };
    const auto dot = target.find('.');
    if (dot == std::string::npos) {
      r.add_any(target, std::move(m));
    } else {
      r.add(target.substr(0, dot), target.substr(dot + 1), std::move(m));
    }
  }
}

net::awaitable<amf::value> bridge::call(upstream& up, services::call_context& ctx,
                                        std::span<const amf::value> args) {
  if (!method_name(ctx.method)) {
    up.count(outcome::fault);
    throw fault("Client.Upstream.BadMethod", "not a method name: " + services::quoted(ctx.method) +
                                                 " (letters, digits, _ and $ only)");
  }
  const auto& s = up.settings();
  ordered_json body = ordered_json::object();
  try {
    renderer render(s, cfg_.limits.max_depth);
    ordered_json& a = body["args"] = ordered_json::array();
    for (const auto& v : args) a.push_back(render(v));
    if (!s.forward_headers.empty()) {
      ordered_json& h = body["headers"] = ordered_json::object();
      for (const auto& name : s.forward_headers) {
        if (name == "Credentials") continue;  // amfgate checked them: a backend never sees them
        const amf::value v = ctx.header(name);
        if (!v.is_undefined()) h[name] = render(v);
      }
    }
  } catch (const std::exception& e) {  // mapping_error, amf::json::error
    up.count(outcome::fault);
    throw fault("Client.Upstream.Mapping",
                std::string(ctx.service) + "." + std::string(ctx.method) + ": " + e.what());
  }
  body["user"] = user_json(ctx.user);
  body["session"] = ctx.user_session ? ordered_json(pseudonym(ctx.user_session->id)) : nullptr;
  body["client"] = ctx.client_address.substr(0, ctx.client_address.rfind(':'));
  std::string text = body.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  if (text.size() > s.max_request_bytes) {
    up.count(outcome::fault);
    throw fault("Client.Upstream.TooLarge",
                "the call's JSON is " + std::to_string(text.size()) + " bytes, more than " +
                    std::to_string(s.max_request_bytes) + " (max_request_bytes)");
  }
  const std::string path = std::string(ctx.service) + "/" + std::string(ctx.method);
  answer a = co_await up.post(path, std::move(text), ctx.deadline);
  const ordered_json result = result_of(up, a, path);
  try {
    amf::value v = s.mapping == "typed"
                       ? amf::json::reader(ctx.doc).amf3(result)
                       : from_plain(ctx.doc, result, {cfg_.limits.max_depth, SIZE_MAX});
    up.judged(outcome::ok, false);
    co_return v;
  } catch (const std::exception& e) {
    up.judged(outcome::failed, false);
    throw fault("Server.Upstream.BadReply",
                "upstream " + up.name() + " answered " + path + ": " + e.what());
  }
}

net::awaitable<bool> bridge::authorize(upstream& up, services::access_request a) {
  const bool subscribing = a.op == services::access_request::operation::subscribe;
  const ordered_json asked{
      {"operation", subscribing ? "subscribe" : "send"},
      {"destination", std::string(a.destination)},
      {"subtopic", a.subtopic.empty() ? ordered_json(nullptr) : ordered_json(a.subtopic)},
      {"user", user_json(a.user)}};
  const std::string path = "_authorize/" + std::string(a.destination);
  const auto deadline = std::chrono::steady_clock::now() + up.settings().read_timeout;
  const answer answered = co_await up.post(
      path, asked.dump(-1, ' ', false, ordered_json::error_handler_t::replace), deadline);
  const ordered_json result = result_of(up, answered, path);
  if (!result.is_boolean()) {
    up.judged(outcome::failed, false);
    throw fault(
        "Server.Upstream.BadReply",
        "upstream " + up.name() + " answered " + path + " with a result that is not true or false",
        cut(result, 200));
  }
  up.judged(outcome::ok, false);
  co_return result.get<bool>();
}

ordered_json bridge::result_of(upstream& up, const answer& a, const std::string& path) {
  const std::string who = "upstream " + up.name();
  ordered_json reply = ordered_json::parse(a.body, nullptr, false);
  const bool gateway_error = a.status == 502 || a.status == 503 || a.status == 504;
  if (reply.is_object() && reply.contains("fault")) {
    // The backend's own fault, whatever the status.
    const ordered_json& f = reply["fault"];
    up.judged(outcome::fault, gateway_error);
    const ordered_json none;
    auto field = [&](const char* k) -> const ordered_json& {
      return f.is_object() && f.contains(k) ? f[k] : none;
    };
    std::string code = cut(field("code"), 128);
    throw fault(code.empty() ? "Server.Upstream.Fault" : code, cut(field("message"), 1024),
                cut(field("detail"), 4096));
  }
  if (a.status < 200 || a.status > 299) {
    up.judged(outcome::fault, gateway_error);
    throw fault("Server.Upstream.Status",
                who + " answered HTTP " + std::to_string(a.status) + " to " + path,
                services::escaped(a.body, 200));
  }
  if (reply.is_discarded() || !reply.is_object() || !reply.contains("result")) {
    up.judged(outcome::failed, true);
    throw fault("Server.Upstream.BadReply",
                who + " answered " + path +
                    (reply.is_discarded() ? " with what is not JSON"
                                          : " with JSON that holds neither result nor fault"),
                services::escaped(a.body, 200));
  }
  return std::move(reply["result"]);
}

void bridge::forward(std::string_view upstream_name, const amf::flex::message& m,
                     std::string_view subtopic, const services::principal* user) {
  const auto it = upstreams_.find(upstream_name);
  if (it == upstreams_.end() || !io_) return;
  upstream& up = *it->second.up;
  std::atomic<std::size_t>& in_flight = it->second.forwarding;
  // Bounded: at most max_inflight forwards per upstream wait; past that they are dropped.
  if (in_flight.load() >= up.settings().max_inflight) {
    forwards_dropped_.fetch_add(1);
    log_->warn("forward of message {} to upstream {} dropped: {} forwards in flight", m.message_id,
               up.name(), in_flight.load());
    return;
  }
  ordered_json j = ordered_json::object();
  try {
    renderer render(up.settings(), cfg_.limits.max_depth);
    j["destination"] = std::string(m.destination);
    j["subtopic"] = subtopic.empty() ? ordered_json(nullptr) : ordered_json(std::string(subtopic));
    j["messageId"] = std::string(m.message_id);
    j["clientId"] = m.client_id.kind() == amf::type::string
                        ? ordered_json(std::string(m.client_id.as_string()))
                        : ordered_json(nullptr);
    j["timestamp"] = m.timestamp;
    ordered_json& h = j["headers"] = ordered_json::object();
    if (const amf::object_node* from = m.headers.as_object()) {
      for (const auto& [name, v] : from->dynamic) {
        if (name.starts_with("DS")) continue;  // the channel's own
        h[std::string(name)] = render(v);
      }
    }
    j["body"] = render(m.body);
    j["user"] = user_json(user);
  } catch (const std::exception& e) {
    forwards_failed_.fetch_add(1);
    log_->warn("forward of message {} to upstream {}: {}", m.message_id, up.name(), e.what());
    return;
  }
  in_flight.fetch_add(1);
  net::co_spawn(io_,
                send_forward(up, in_flight, "_messages/" + std::string(m.destination),
                             j.dump(-1, ' ', false, ordered_json::error_handler_t::replace)),
                net::detached);
}

net::awaitable<void> bridge::send_forward(upstream& up, std::atomic<std::size_t>& in_flight,
                                          std::string path, std::string body) {
  struct done {
    std::atomic<std::size_t>& n;
    ~done() { n.fetch_sub(1); }
  } counted{in_flight};
  const auto deadline = std::chrono::steady_clock::now() + up.settings().read_timeout;
  try {
    const answer a = co_await up.post(path, std::move(body), deadline);
    const bool ok = a.status >= 200 && a.status <= 299;
    up.judged(ok ? outcome::ok : outcome::fault, a.status >= 502 && a.status <= 504);
    if (ok) {
      forwards_sent_.fetch_add(1);
      co_return;
    }
    log_->warn("forward to upstream {} {}: HTTP {}", up.name(), path, a.status);
  } catch (const std::exception& e) {
    log_->warn("forward to upstream {} {}: {}", up.name(), path, e.what());
  }
  forwards_failed_.fetch_add(1);
}

void bridge::render(std::string& out) const {
  if (upstreams_.empty()) return;
  out += "# TYPE amfgate_upstream_calls_total counter\n";
  for (const auto& [name, t] : upstreams_) t.up->render(out);
  out += "amfgate_forwards_total{outcome=\"sent\"} " + std::to_string(forwards_sent_.load()) +
         "\namfgate_forwards_total{outcome=\"failed\"} " + std::to_string(forwards_failed_.load()) +
         "\namfgate_forwards_total{outcome=\"dropped\"} " +
         std::to_string(forwards_dropped_.load()) + "\n";
}

}  // namespace amfgate::bridge
