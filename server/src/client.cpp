#include "amfgate/server/client.hpp"

// Boost.URL, compiled into this file: Debian's Boost 1.81 ships its headers but no library.
#include <boost/url/parse.hpp>
#include <boost/url/src.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>

#include "amf/base64.hpp"
#include "amf/encode.hpp"
#include "amf/packet.hpp"

namespace amfgate::client {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

url url::parse(std::string_view text) {
  const auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    throw std::invalid_argument("not a URL: " + std::string(text) + " (" +
                                parsed.error().message() + ")");
  }
  const boost::urls::url_view& v = *parsed;
  if (v.scheme_id() != boost::urls::scheme::http) {
    throw std::invalid_argument("expected an http:// URL, got " + std::string(text));
  }
  url u;
  u.host = v.host_address();  // an IPv6 address without its brackets
  if (u.host.empty()) throw std::invalid_argument("no host in " + std::string(text));
  if (v.has_port()) u.port = v.port();
  u.target = v.encoded_target();
  if (u.target.empty()) u.target = "/";
  return u;
}

std::string response::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, name)) return v;
  }
  return {};
}

struct http_client::impl {
  net::io_context ioc;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
};

http_client::http_client(std::string host, std::string port)
    : impl_(std::make_unique<impl>()), host_(std::move(host)), port_(std::move(port)) {}
http_client::~http_client() = default;

response http_client::post(const std::string& target, const std::string& body,
                           const std::string& content_type) {
  return request("POST", target, body, content_type);
}

response http_client::get(const std::string& target) {
  return request("GET", target, {}, {});
}

response http_client::request(const std::string& method, const std::string& target,
                              const std::string& body, const std::string& content_type) {
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, host_);
  req.set(http::field::user_agent, "amfcall");
  if (!content_type.empty()) req.set(http::field::content_type, content_type);
  std::string cookie;
  for (const auto& [k, v] : cookies) cookie += (cookie.empty() ? "" : "; ") + k + "=" + v;
  if (!cookie.empty()) req.set(http::field::cookie, cookie);
  req.body() = body;
  req.keep_alive(true);
  req.prepare_payload();

  // One retry on a fresh connection: the server may have closed an idle keep-alive one.
  for (int attempt = 0;; ++attempt) {
    try {
      if (!impl_->stream) {
        impl_->stream.emplace(impl_->ioc);
        tcp::resolver resolver(impl_->ioc);
        impl_->stream->connect(resolver.resolve(host_, port_));
        impl_->buffer.clear();
      }
      http::write(*impl_->stream, req);
      http::response_parser<http::string_body> parser;
      parser.body_limit(std::uint64_t{1} << 32);
      http::read(*impl_->stream, impl_->buffer, parser);
      auto res = parser.release();
      response out;
      out.status = res.result_int();
      out.body = std::move(res.body());
      for (const auto& f : res) {
        out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        if (f.name() == http::field::set_cookie) {
          const std::string_view c = f.value();
          const auto eq = c.find('=');
          const auto end = c.find(';');
          if (eq == std::string_view::npos) continue;
          std::string name(c.substr(0, eq)), value(c.substr(eq + 1, end - eq - 1));
          if (value.empty()) {
            cookies.erase(name);
          } else {
            cookies[name] = value;
          }
        }
      }
      if (!res.keep_alive()) impl_->stream.reset();
      return out;
    } catch (const boost::system::system_error&) {
      impl_->stream.reset();
      if (attempt > 0) throw;
    }
  }
}

std::string http_client::raw(const std::string& bytes, int timeout_ms) {
  beast::tcp_stream s(impl_->ioc);
  tcp::resolver resolver(impl_->ioc);
  s.connect(resolver.resolve(host_, port_));
  net::write(s.socket(), net::buffer(bytes));
  std::string out;
  char buf[4096];
  s.expires_after(std::chrono::milliseconds(timeout_ms));
  for (;;) {
    beast::error_code ec;
    const std::size_t n = s.read_some(net::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

std::string netconnection_request(std::string_view target, std::span<const amf::value> args,
                                  bool amf3, std::string_view user, std::string_view password,
                                  int call_number) {
  amf::document doc;
  amf::packet p(doc.resource());
  p.version = amf3 ? 3 : 0;
  if (!user.empty()) {
    amf::object_node* c = doc.object();
    c->dynamic.push_back({"userid", doc.string(user)});
    c->dynamic.push_back({"password", doc.string(password)});
    p.headers.push_back({"Credentials", false, amf::unknown_length, amf::value::of(c)});
  }
  amf::array_node* a = doc.array(args.size());
  for (const auto& v : args) {
    a->dense.push_back(amf3 ? v.with_flags(v.flags() | amf::value::avmplus) : v);
  }
  const std::string response = "/" + std::to_string(call_number);
  p.bodies.push_back({target, response, amf::unknown_length, amf::value::of(a)});
  std::string out;
  amf::encode_packet(p, out);
  return out;
}

std::string flex_request(std::span<const amf::value> messages) {
  amf::document doc;
  amf::packet p(doc.resource());
  p.version = 3;
  int n = 0;
  for (const auto& m : messages) {
    amf::array_node* a = doc.array(1);
    a->dense.push_back(m.with_flags(amf::value::avmplus));
    p.bodies.push_back(
        {"null", doc.copy("/" + std::to_string(++n)), amf::unknown_length, amf::value::of(a)});
  }
  std::string out;
  amf::encode_packet(p, out);
  return out;
}

amf::value flex_command(amf::document& doc, amf::flex::operation op, std::string_view dsid,
                        std::string_view login_user, std::string_view login_password) {
  amf::flex::message m;
  m.kind = amf::flex::kind::command;
  m.command = static_cast<std::int32_t>(op);
  const std::string id = amf::flex::new_uuid();
  m.message_id = doc.copy(id);
  m.body = op == amf::flex::operation::login
               ? doc.string(amf::base64_encode(std::string(login_user) + ":" +
                                               std::string(login_password)))
               : amf::value::of(doc.object());
  amf::flex::set_header(doc, m, "DSMessagingVersion", amf::value::integer(1));
  amf::flex::set_header(doc, m, "DSId", doc.string(dsid.empty() ? "nil" : dsid));
  return amf::flex::make(doc, m);
}

amf::value flex_remoting(amf::document& doc, std::string_view destination, std::string_view method,
                         std::span<const amf::value> args, std::string_view dsid) {
  amf::flex::message m;
  m.kind = amf::flex::kind::remoting;
  m.destination = doc.copy(destination);
  m.method = doc.copy(method);
  const std::string id = amf::flex::new_uuid();
  m.message_id = doc.copy(id);
  amf::array_node* a = doc.array(args.size());
  for (const auto& v : args) a->dense.push_back(v);
  m.body = amf::value::of(a);
  amf::flex::set_header(doc, m, "DSEndpoint", doc.string("my-amf"));
  amf::flex::set_header(doc, m, "DSId", doc.string(dsid.empty() ? "nil" : dsid));
  return amf::flex::make(doc, m);
}

}  // namespace amfgate::client
