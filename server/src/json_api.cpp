#include "amfgate/server/json_api.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "amf/flex.hpp"
#include "amf/json.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/budget.hpp"
#include "amfgate/server/client.hpp"

namespace amfgate::server {

namespace net = boost::asio;
using ojson = nlohmann::ordered_json;

namespace {

http_reply json_reply(unsigned status, const ojson& j) {
  http_reply r;
  r.status = status;
  r.content_type = "application/json";
  r.body = j.dump();
  r.body += '\n';
  return r;
}

http_reply fault_reply(unsigned status, std::string_view code, std::string_view message,
                       std::string_view detail = {}) {
  return json_reply(status,
                    {{"faultCode", code}, {"faultString", message}, {"faultDetail", detail}});
}

// The HTTP status of a fault: the client's mistakes 4xx, the server's 5xx, and 422 for an
// application's own fault (Contact.NotFound: the service refused the call).
unsigned fault_status(std::string_view code, bool method_exists) {
  if (code == "Client.Authentication" || code == "Client.Authorization") return 403;
  if (code == "Server.ResourceNotFound") return 404;
  // The gateway says ResourceUnavailable of a missing method and of arguments that do not fit.
  if (code == "Server.ResourceUnavailable") return method_exists ? 400 : 404;
  if (code == "Server.Timeout") return 504;
  if (code == "Server.Busy" || code == "Server.Session.Unavailable") return 503;
  if (code.starts_with("Client.")) return 400;
  if (code.starts_with("Server.")) return 500;
  return 422;
}

// JSON no deeper than `max_depth`: the typed-JSON reader recurses once per level. The depth
// is checked by a SAX pass that stops at the first level too deep, then the text is parsed
// without a callback: both are linear. (nlohmann's callback parser, which checked the depth
// before, is quadratic in the number of nested values: 300 KB took 9 s.)
ojson parse_limited(std::string_view text, std::size_t max_depth) {
  struct depth_check : nlohmann::json_sax<ojson> {
    std::size_t depth = 0, max = 0;
    bool deeper() { return ++depth <= max; }
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return deeper(); }
    bool key(string_t&) override { return true; }
    bool end_object() override { return --depth, true; }
    bool start_array(std::size_t) override { return deeper(); }
    bool end_array() override { return --depth, true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
      return true;  // not JSON: the parse below says where
    }
  } check;
  check.max = max_depth;
  if (!ojson::sax_parse(text, &check) && check.depth > max_depth) {
    throw std::length_error("nested deeper than limits.max_depth (" + std::to_string(max_depth) +
                            ")");
  }
  return ojson::parse(text);
}

std::string_view text_of(const amf::value* v) {
  return v && v->kind() == amf::type::string ? v->as_string() : std::string_view();
}

// What the gateway said when it did not answer 200 (a 400 or 503 in text).
http_reply refusal(const exchange& ex) {
  std::string why = ex.reply.body;
  while (!why.empty() && why.back() == '\n') why.pop_back();
  http_reply r = fault_reply(
      ex.reply.status, ex.reply.status == 503 ? "Server.Busy" : "Client.Message.Encoding", why);
  r.headers = ex.reply.headers;  // Retry-After
  return r;
}

}  // namespace

json_api::json_api(const config::gateway_config& cfg, gateway& gw,
                   const services::registry& services, std::shared_ptr<spdlog::logger> log)
    : cfg_(cfg), gateway_(gw), services_(services), log_(std::move(log)) {}

net::awaitable<std::variant<http_reply, amf::body>> json_api::first_answer(std::string packet,
                                                                           exchange& ex,
                                                                           amf::document& answer) {
  co_await gateway_.handle(std::move(packet), ex);
  if (ex.reply.status != 200) co_return refusal(ex);
  co_return amf::decode_packet(amf::as_bytes(ex.reply.body), answer).bodies.at(0);
}

net::awaitable<http_reply> json_api::call(std::string_view service, std::string_view method,
                                          http_request& req, exchange& ex) {
  if (!media_type_is(req.content_type, "application/json")) {
    co_return fault_reply(415, "Client.Message.Encoding",
                          "expected Content-Type application/json: a JSON array of arguments");
  }
  amf::document doc;
  std::vector<amf::value> args;
  try {
    const ojson j = parse_limited(req.body, cfg_.limits.max_depth);
    if (!j.is_array()) throw amf::json::error("/: expected a JSON array of arguments");
    amf::json::reader reader(doc, &services_.classes());
    for (std::size_t i = 0; i < j.size(); ++i) {
      try {
        args.push_back(reader.amf3(j[i]));
      } catch (const amf::json::error& e) {  // "/$int: ..." of argument i: "/i/$int: ..."
        throw amf::json::error("/" + std::to_string(i) + e.what());
      }
    }
  } catch (const std::exception& e) {
    co_return fault_reply(400, "Client.Message.Encoding",
                          std::string("bad arguments: ") + e.what());
  }
  const std::string target = std::string(service) + "." + std::string(method);
  amf::document answer;
  auto sent = co_await first_answer(client::netconnection_request(target, args, true), ex, answer);
  if (auto* refused = std::get_if<http_reply>(&sent)) co_return std::move(*refused);
  const amf::body& b = std::get<amf::body>(sent);
  if (b.target.ends_with("/onResult")) co_return json_reply(200, amf::json::writer().amf3(b.val));
  const amf::object_node* status = b.val.as_object();
  const auto code = status ? text_of(status->find("code")) : std::string_view("Server.Processing");
  co_return fault_reply(fault_status(code, services_.find(service, method) != nullptr), code,
                        status ? text_of(status->find("description")) : "",
                        status ? text_of(status->find("details")) : "");
}

net::awaitable<http_reply> json_api::login(http_request& req, exchange& ex) {
  std::string user, password;
  try {
    const ojson j = parse_limited(req.body, cfg_.limits.max_depth);
    user = j.at("user").get<std::string>();
    password = j.at("password").get<std::string>();
  } catch (const std::length_error& e) {
    co_return fault_reply(400, "Client.Message.Encoding", e.what());
  } catch (const std::exception&) {
    co_return fault_reply(400, "Client.Message.Encoding",
                          "expected {\"user\": \"...\", \"password\": \"...\"}");
  }
  amf::document doc;
  // Named, not built inside co_await: GCC 12 miscompiles braced temporaries there.
  const std::vector<amf::value> messages{
      client::flex_command(doc, amf::flex::operation::login, "", user, password)};
  amf::document answer;
  auto sent = co_await first_answer(client::flex_request(messages), ex, answer);
  if (auto* refused = std::get_if<http_reply>(&sent)) co_return std::move(*refused);
  const auto reply = amf::flex::read(std::get<amf::body>(sent).val, answer);
  if (reply && reply->kind == amf::flex::kind::error) {
    co_return fault_reply(fault_status(reply->fault_code, true), reply->fault_code,
                          reply->fault_string, reply->fault_detail);
  }
  const ojson who{{"user", user}};
  co_return json_reply(200, who);
}

net::awaitable<http_reply> json_api::logout(exchange& ex) {
  amf::document doc;
  const std::vector<amf::value> messages{
      client::flex_command(doc, amf::flex::operation::logout, "")};
  amf::document answer;
  auto sent = co_await first_answer(client::flex_request(messages), ex, answer);
  if (auto* refused = std::get_if<http_reply>(&sent)) co_return std::move(*refused);
  co_return json_reply(200, ojson::object());
}

net::awaitable<http_reply> json_api::trace(http_request& req, exchange& ex) {
  amf::document doc;
  std::string request;
  try {
    const ojson j = parse_limited(req.body, cfg_.limits.max_depth);
    const auto service = j.at("service").get<std::string>();
    const auto method = j.at("method").get<std::string>();
    const auto encoding = j.value("encoding", std::string("amf3"));
    const ojson& arguments = j.at("arguments");
    if (!arguments.is_array()) throw amf::json::error("/arguments: expected an array");
    amf::json::reader reader(doc, &services_.classes());
    std::vector<amf::value> args;
    for (const auto& a : arguments) {
      args.push_back(encoding == "amf0" ? reader.amf0(a) : reader.amf3(a));
    }
    if (encoding == "flex") {
      const amf::value message = client::flex_remoting(doc, service, method, args, "");
      request = client::flex_request(std::vector{message});
    } else if (encoding == "amf0" || encoding == "amf3") {
      request = client::netconnection_request(service + "." + method, args, encoding == "amf3");
    } else {
      throw amf::json::error("/encoding: expected amf0, amf3 or flex");
    }
  } catch (const std::exception& e) {
    co_return fault_reply(400, "Client.Message.Encoding", std::string("bad call: ") + e.what());
  }
  ojson out{{"request", amf::json::to_hex(amf::as_bytes(request))}};
  {
    amf::document sent;
    out["request_packet"] =
        amf::json::writer().packet(amf::decode_packet(amf::as_bytes(request), sent));
  }
  const auto started = std::chrono::steady_clock::now();
  co_await gateway_.handle(request, ex);
  out["millis"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  out["status"] = ex.reply.status;
  if (ex.reply.status != 200) {
    out["error"] = ex.reply.body;
  } else {
    out["response"] = amf::json::to_hex(amf::as_bytes(ex.reply.body));
    amf::document answer;
    out["response_packet"] =
        amf::json::writer().packet(amf::decode_packet(amf::as_bytes(ex.reply.body), answer));
  }
  co_return json_reply(200, out);
}

http_reply json_api::decode(const http_request& req) const {
  decode_cap cap(&amf::block_pool::shared(), cfg_.limits.max_decoded_bytes);
  amf::document doc(req.body.size() * 2 + 1024, &cap);
  amf::decode_options opt;
  opt.classes = &services_.classes();
  opt.max_depth = cfg_.limits.max_depth;
  amf::decode_error ec;
  amf::packet p{doc.resource()};
  try {
    p = amf::decode_packet(amf::as_bytes(req.body), doc, ec, opt);
  } catch (const decoded_too_large& e) {
    return json_reply(413, {{"error", std::string(e.what()) + " (" +
                                          std::to_string(cfg_.limits.max_decoded_bytes) + ")"},
                            {"bytes", req.body.size()}});
  }
  if (ec) {
    return json_reply(422,
                      {{"error", ec.message()}, {"offset", ec.offset}, {"bytes", req.body.size()}});
  }
  // The tree is bounded as any answer is: a packet may reference one string a million times.
  try {
    ojson tree = amf::json::writer(cfg_.limits.max_response_bytes).packet(p);
    return json_reply(200, {{"packet", std::move(tree)}, {"bytes", req.body.size()}});
  } catch (const amf::json::error& e) {
    return json_reply(413, {{"error", std::string(e.what()) + " (limits.max_response_bytes)"},
                            {"bytes", req.body.size()}});
  }
}

}  // namespace amfgate::server
