#include "amfgate/server/gateway.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "amf/flex.hpp"

namespace amfgate::server {

using services::fault;

struct gateway::request {
  exchange& ex;
  amf::document& doc;
  const amf::packet& packet;
  std::optional<services::session> sess;
  std::optional<services::principal> user;
  std::string refused_user;  ///< a Credentials header that did not log in
  bool session_dirty = false;
  std::string store_error;  ///< why the session store could not be used, if it could not
};

namespace {

double now_ms() {
  using namespace std::chrono;
  return static_cast<double>(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

std::string base64_decode(std::string_view in) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int d = digit(c);
    if (d < 0) return {};
    acc = (acc << 6) | static_cast<unsigned>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// What a client is told when a call needs the session store and the store cannot be reached.
fault store_fault(const std::string& why) {
  return fault("Server.Session.Unavailable",
               "the session store is unreachable (" + why +
                   "); logins and calls that need one fail until it is back");
}

std::string_view text(const amf::value* v) {
  return v && v->kind() == amf::type::string ? v->as_string() : std::string_view{};
}

// Arguments as a span: a strict array's items, or the one value sent bare.
std::span<const amf::value> arguments(const amf::value& v) {
  if (auto* a = v.as_array(); a && v.kind() == amf::type::array && a->assoc.empty()) {
    return {a->dense.data(), a->dense.size()};
  }
  return {&v, 1};
}

}  // namespace

gateway::gateway(const config::gateway_config& cfg, services::registry& services,
                 services::session_store& sessions, const services::authenticator& auth,
                 std::shared_ptr<spdlog::logger> log)
    : cfg_(cfg), services_(services), sessions_(sessions), auth_(auth), log_(std::move(log)) {}

bool gateway::may_use_sessions(std::string_view body, std::string_view session_id) {
  return !session_id.empty() || body.find("Credentials") != std::string_view::npos ||
         body.find("CommandMessage") != std::string_view::npos ||
         body.find("DSC") != std::string_view::npos;
}

void gateway::handle(std::string_view body, exchange& ex) {
  ex.body.clear();
  amf::document doc(body.size() * 2 + 1024);
  amf::decode_options opt;
  opt.classes = &services_.classes();
  opt.max_depth = cfg_.limits.max_depth;
  amf::decode_error ec;
  const amf::packet in = amf::decode_packet(amf::as_bytes(body), doc, ec, opt);
  if (ec) {
    ex.status = 400;
    ex.content_type = "text/plain; charset=utf-8";
    ex.body = "bad AMF packet: " + ec.message() + "\n";
    return;
  }
  request rq{ex, doc, in, std::nullopt, std::nullopt, {}, false, {}};
  if (!ex.session_id.empty()) {
    try {
      rq.sess = sessions_.find(ex.session_id);
    } catch (const services::store_unavailable& e) {
      rq.store_error = e.what();  // calls that need no session still run
    }
    if (rq.sess) rq.user = rq.sess->user;
  }
  // NetConnection.setCredentials: a Credentials header on every call. A session already
  // logged in as that user skips the (deliberately slow) password check.
  for (const auto& h : in.headers) {
    const amf::object_node* c = h.name == "Credentials" ? h.val.as_object() : nullptr;
    if (!c) continue;
    const auto user = text(c->find("userid"));
    if (!(rq.user && rq.user->name == user)) {
      login(rq, user, text(c->find("password")));
    }
  }

  amf::packet out(doc.resource());
  out.version = in.version;
  for (const auto& b : in.bodies) {
    ++ex.messages;
    bool failed = false;
    amf::value reply;
    std::string_view response_uri;  // BlazeDS answers Flex with "", PyAMF/Flash use "null"
    if (b.target == "null") {
      // Flex: one message per body, inside an argument array or (some clients) bare.
      amf::value msg = b.val;
      if (auto* a = msg.as_array(); a && msg.kind() == amf::type::array && a->dense.size() == 1) {
        msg = a->dense[0];
      }
      reply = flex_message(rq, msg, failed).with_flags(amf::value::avmplus);
    } else {
      reply = call_netconnection(rq, b, failed);
      response_uri = "null";
    }
    out.bodies.push_back({doc.copy(std::string(b.response) + (failed ? "/onStatus" : "/onResult")),
                          response_uri, amf::unknown_length, reply});
    if (failed) ++ex.faults;
  }
  if (rq.session_dirty && rq.sess) {
    try {
      sessions_.save(*rq.sess);
    } catch (const services::store_unavailable& e) {
      log_->warn("session {} not saved: {}", rq.sess->id, e.what());
    }
  }
  if (!ex.new_session_id.empty()) {
    out.headers.push_back({"AppendToGatewayUrl", false, amf::unknown_length,
                           doc.string(";" + cfg_.sessions.cookie + "=" + ex.new_session_id)});
  }
  // Every length field says "unknown" (ff ff ff ff), as Flash Player's servers (BlazeDS, Red5)
  // answer; clients never read them.
  amf::encode_packet(out, ex.body, amf::length_fields::as_given);
}

bool gateway::open_session(request& rq) {
  if (rq.sess) return true;
  try {
    rq.sess = sessions_.create();
  } catch (const services::store_unavailable& e) {
    rq.store_error = e.what();
    return false;
  }
  rq.ex.new_session_id = rq.sess->id;
  return true;
}

void gateway::login(request& rq, std::string_view user, std::string_view password) {
  std::optional<services::principal> p;
  if (!user.empty() && !password.empty()) p = auth_.authenticate(user, password);
  if (!p) {
    rq.refused_user = user;
    log_->info("login refused for user \"{}\" from {}", user, rq.ex.client_address);
    return;
  }
  if (!open_session(rq)) {
    log_->warn("login of user \"{}\" from {} failed: {}", user, rq.ex.client_address,
               rq.store_error);
    return;
  }
  rq.sess->user = p;
  rq.user = p;
  rq.session_dirty = true;
  log_->info("user \"{}\" logged in from {}", user, rq.ex.client_address);
}

void gateway::check_access(request& rq, std::string_view service, std::string_view method) {
  const std::string full = std::string(service) + "." + std::string(method);
  auto rule = cfg_.access.find(full);
  if (rule == cfg_.access.end()) rule = cfg_.access.find(std::string(service));
  if (rule == cfg_.access.end()) return;
  const auto& r = rule->second;
  if ((r.authenticated || !r.roles.empty()) && !rq.user) {
    if (!rq.store_error.empty()) throw store_fault(rq.store_error);
    throw fault("Client.Authentication", rq.refused_user.empty()
                                             ? full + " requires a login"
                                             : "Invalid login for user \"" + rq.refused_user +
                                                   "\"; " + full + " requires a login");
  }
  if (r.roles.empty()) return;
  for (const auto& role : r.roles) {
    if (rq.user->has_role(role)) return;
  }
  throw fault("Client.Authorization", "user \"" + rq.user->name + "\" may not call " + full);
}

amf::value gateway::invoke(request& rq, std::string_view service, std::string_view method,
                           std::span<const amf::value> args) {
  const services::method* m = services_.find(service, method);
  if (!m) {
    if (!services_.has_service(service)) {
      throw fault("Server.ResourceNotFound", "no service named \"" + std::string(service) + "\"");
    }
    throw fault(
        "Server.ResourceUnavailable",
        "service \"" + std::string(service) + "\" has no method \"" + std::string(method) + "\"");
  }
  check_access(rq, service, method);
  services::call_context ctx(service, method, rq.doc);
  ctx.request = &rq.packet;
  ctx.client_address = rq.ex.client_address;
  ctx.user_session = rq.sess;
  ctx.user = rq.user ? &*rq.user : nullptr;
  ctx.logger = log_.get();
  try {
    return m->invoke(ctx, args);
  } catch (const fault&) {
    throw;
  } catch (const std::exception& e) {
    log_->error("{}.{} from {} threw: {}", service, method, rq.ex.client_address, e.what());
    throw fault("Server.Processing",
                "an error occurred in " + std::string(service) + "." + std::string(method),
                cfg_.debug ? e.what() : "");
  } catch (...) {
    log_->error("{}.{} from {} threw a non-standard exception", service, method,
                rq.ex.client_address);
    throw fault("Server.Processing",
                "an error occurred in " + std::string(service) + "." + std::string(method));
  }
}

amf::value gateway::call_netconnection(request& rq, const amf::body& b, bool& failed) {
  std::string_view target = b.target;
  std::string_view service = cfg_.default_service, method = target;
  if (auto dot = target.rfind('.'); dot != std::string_view::npos) {
    service = target.substr(0, dot);
    method = target.substr(dot + 1);
  }
  const auto args = arguments(b.val);
  // Answer in the encoding of the call: AMF3 when the arguments came behind the switch.
  bool amf3 = rq.packet.version == 3 && args.empty();
  for (const auto& a : args) amf3 |= a.has_flag(amf::value::avmplus);
  auto encoded = [&](amf::value v) {
    return amf3 ? v.with_flags(v.flags() | amf::value::avmplus) : v;
  };
  try {
    return encoded(invoke(rq, service, method, args));
  } catch (const fault& f) {
    failed = true;
    log_->debug("{} from {}: {}: {}", target, rq.ex.client_address, f.code(), f.what());
    amf::object_node* o = rq.doc.object();
    o->dynamic.push_back({"level", rq.doc.string("error")});
    o->dynamic.push_back({"code", rq.doc.string(f.code())});
    o->dynamic.push_back({"type", rq.doc.string(f.code())});
    o->dynamic.push_back({"description", rq.doc.string(f.what())});
    o->dynamic.push_back({"details", rq.doc.string(f.detail())});
    return encoded(amf::value::of(o));
  }
}

amf::value gateway::flex_message(request& rq, const amf::value& v, bool& failed) {
  amf::document& doc = rq.doc;
  const auto in = amf::flex::read(v, doc);
  const std::string message_id = amf::flex::new_uuid();
  auto error_reply = [&](const fault& f) {
    failed = true;
    amf::flex::message e;
    e.kind = amf::flex::kind::error;
    if (in) {
      e.correlation_id = in->message_id;
      e.client_id = in->client_id;
      e.destination = in->destination;
    }
    e.message_id = message_id;
    e.timestamp = now_ms();
    e.fault_code = f.code();
    e.fault_string = f.what();
    e.fault_detail = f.detail();
    return amf::flex::make(doc, e);
  };
  if (!in) return error_reply(fault("Client.Message.Encoding", "not a Flex message"));

  amf::flex::message ack;
  ack.kind = amf::flex::kind::acknowledge;
  ack.correlation_id = in->message_id;
  ack.client_id =
      in->client_id.kind() == amf::type::string ? in->client_id : doc.string(amf::flex::new_uuid());
  ack.message_id = message_id;
  ack.timestamp = now_ms();
  bool small = rq.sess && rq.sess->small_messages;

  // The FlexClient id: kept from the client, or from the session, or made here.
  auto client_headers = [&] {
    std::string dsid;
    const amf::value h = in->header("DSId");
    if (h.kind() == amf::type::string && h.as_string() != "nil") dsid = h.as_string();
    if (dsid.empty() && rq.sess) dsid = rq.sess->flex_client_id;
    if (dsid.empty()) dsid = amf::flex::new_uuid();
    if (rq.sess && rq.sess->flex_client_id != dsid) {
      rq.sess->flex_client_id = dsid;
      rq.session_dirty = true;
    }
    amf::flex::set_header(doc, ack, "DSId", doc.string(dsid));
    amf::flex::set_header(doc, ack, "DSMessagingVersion", amf::value::number(1.0));
    const amf::value version = in->header("DSMessagingVersion");
    if (cfg_.small_messages && version.is_numeric() && version.to_double() >= 1.0) {
      if (!open_session(rq)) return;  // answered in standard messages, which need no session
      rq.sess->small_messages = small = true;
      rq.session_dirty = true;
    }
  };

  try {
    switch (in->kind) {
      case amf::flex::kind::remoting: {
        ack.body = invoke(rq, in->destination, in->method, arguments(in->body));
        break;
      }
      case amf::flex::kind::command: {
        using op = amf::flex::operation;
        switch (static_cast<op>(in->command)) {
          case op::client_ping:
          case op::trigger_connect:
            client_headers();
            ack.body = amf::value::boolean(true);
            break;
          case op::login: {
            client_headers();
            const std::string cred = base64_decode(text(&in->body));
            const auto colon = cred.find(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == cred.size()) {
              throw fault("Client.Authentication", "Invalid credential format.");
            }
            if (rq.user) {
              throw fault("Client.Authentication",
                          "Already logged in as \"" + rq.user->name + "\"; log out first.");
            }
            login(rq, std::string_view(cred).substr(0, colon),
                  std::string_view(cred).substr(colon + 1));
            if (!rq.user && !rq.store_error.empty()) throw store_fault(rq.store_error);
            if (!rq.user) throw fault("Client.Authentication", "Invalid login.");
            ack.body = doc.string("success");
            break;
          }
          case op::logout:
            if (!rq.sess && !rq.store_error.empty()) throw store_fault(rq.store_error);
            if (rq.sess) {
              try {
                sessions_.remove(rq.sess->id);
              } catch (const services::store_unavailable& e) {
                throw store_fault(e.what());  // not ended everywhere: the client must know
              }
              rq.sess.reset();
              rq.ex.session_ended = true;
            }
            rq.user.reset();
            ack.body = doc.string("success");
            break;
          case op::disconnect:
          case op::client_sync:
          case op::poll:
          case op::cluster_request:
            ack.body = amf::value::null();
            break;
          case op::subscribe:
          case op::unsubscribe:
          case op::subscription_invalidate:
          case op::multi_subscribe:
            throw fault("Server.Processing", "no messaging service: destination \"" +
                                                 std::string(in->destination) +
                                                 "\" cannot be subscribed to");
          default:
            throw fault("Server.Processing",
                        "unknown CommandMessage operation " + std::to_string(in->command));
        }
        break;
      }
      case amf::flex::kind::async:
        throw fault("Server.Processing", "no messaging service: publishing is not supported");
      default:
        throw fault("Client.Message.Encoding",
                    "a client cannot send acknowledge or error messages");
    }
  } catch (const fault& f) {
    log_->debug("Flex message from {}: {}: {}", rq.ex.client_address, f.code(), f.what());
    return error_reply(f);
  }
  return small ? amf::flex::make_small(doc, ack) : amf::flex::make(doc, ack);
}

}  // namespace amfgate::server
