// amfcall: call an AMF gateway from the command line, the curl of this project.
//
//   amfcall [options] URL Service.method [ARG...]
//
// ARGs are typed JSON (docs/typed-json.md): 42.0, "text", {"$int": 7}, [1.0, 2.0],
// {"name": "x"}; a bare word that is not JSON is taken as a string. Prints the result as typed
// JSON; a fault goes to standard error and the exit status is 1.
#include <iostream>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/flex.hpp"
#include "amf/json.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"

namespace {

constexpr const char* usage =
    "usage: amfcall [options] URL Service.method [ARG...]\n"
    "  --amf3            NetConnection with AMF3 arguments (objectEncoding 3)\n"
    "  --flex            Flex RemoteObject: a ping, then a RemotingMessage to the destination\n"
    "  --user U --password P   Credentials header (NetConnection) or Flex login\n"
    "  --raw             print the whole response packet as typed JSON\n"
    "ARGs are typed JSON (\"text\", 42.0, {\"$int\": 7}, [..], {..}); other words are strings.\n"
    "Example: amfcall http://localhost:8080/gateway EchoService.echo '{\"a\": [1.0, 2.0]}'\n";

using amf::json::ordered_json;

int fail(const std::string& what) {
  std::cerr << "amfcall: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  bool amf3 = false, flex = false, raw = false;
  std::string user, password;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--amf3") {
      amf3 = true;
    } else if (a == "--flex") {
      flex = true;
    } else if (a == "--raw") {
      raw = true;
    } else if (a == "--user" && i + 1 < argc) {
      user = argv[++i];
    } else if (a == "--password" && i + 1 < argc) {
      password = argv[++i];
    } else if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    } else if (a.starts_with("--")) {
      std::cerr << "amfcall: unknown option " << a << "\n" << usage;
      return 2;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2) {
    std::cerr << usage;
    return 2;
  }
  try {
    const auto u = amfgate::client::url::parse(positional[0]);
    const std::string target = positional[1];
    amf::document doc;
    amf::json::reader reader(doc);
    std::vector<amf::value> args;
    for (std::size_t i = 2; i < positional.size(); ++i) {
      ordered_json j;
      try {
        j = ordered_json::parse(positional[i]);
      } catch (const std::exception&) {
        j = positional[i];
      }
      reader.reset();
      args.push_back(amf3 || flex ? reader.amf3(j) : reader.amf0(j));
    }
    amfgate::client::http_client http(u.host, u.port);
    auto send = [&](const std::string& body) {
      auto res = http.post(u.target, body);
      if (res.status != 200) {
        throw std::runtime_error("HTTP " + std::to_string(res.status) + ": " + res.body);
      }
      return res.body;
    };
    std::string reply;
    std::string dsid;
    if (flex) {
      const auto dot = target.rfind('.');
      if (dot == std::string::npos) return fail("--flex needs Destination.method");
      amf::document fdoc;
      auto read_ack = [&](const std::string& bytes, amf::document& d) {
        amf::packet p = amf::decode_packet(amf::as_bytes(bytes), d);
        if (p.bodies.empty()) throw std::runtime_error("empty response packet");
        auto m = amf::flex::read(p.bodies[0].val, d);
        if (!m) throw std::runtime_error("the response is not a Flex message");
        return *m;
      };
      const std::string ping = amfgate::client::flex_request(
          std::vector{amfgate::client::flex_command(fdoc, amf::flex::operation::client_ping, "")});
      const std::string pong = send(ping);
      auto ack = read_ack(pong, fdoc);
      if (ack.header("DSId").kind() == amf::type::string) dsid = ack.header("DSId").as_string();
      if (!user.empty()) {
        const std::string login_reply =
            send(amfgate::client::flex_request(std::vector{amfgate::client::flex_command(
                fdoc, amf::flex::operation::login, dsid, user, password)}));
        auto l = read_ack(login_reply, fdoc);
        if (l.kind == amf::flex::kind::error) {
          std::cerr << "amfcall: login: " << l.fault_code << ": " << l.fault_string << "\n";
        }
      }
      reply = send(amfgate::client::flex_request(std::vector{amfgate::client::flex_remoting(
          doc, target.substr(0, dot), target.substr(dot + 1), args, dsid)}));
    } else {
      reply = send(amfgate::client::netconnection_request(target, args, amf3, user, password));
    }

    amf::document rdoc;
    amf::decode_options opt;
    opt.keep_unknown_externals = true;
    amf::packet p = amf::decode_packet(amf::as_bytes(reply), rdoc, opt);
    amf::json::writer w;
    if (raw) {
      std::cout << w.packet(p).dump(1, ' ', false, ordered_json::error_handler_t::replace) << "\n";
      return 0;
    }
    if (p.bodies.empty()) return fail("the response has no body");
    const auto& b = p.bodies[0];
    const bool fault = b.target.ends_with("/onStatus");
    amf::value result = b.val;
    if (flex) {
      auto m = amf::flex::read(b.val, rdoc);
      if (!m) return fail("the response is not a Flex message");
      if (m->kind == amf::flex::kind::error) {
        std::cerr << "fault " << m->fault_code << ": " << m->fault_string
                  << (m->fault_detail.empty() ? "" : "\n  " + std::string(m->fault_detail)) << "\n";
        return 1;
      }
      result = m->body;
    }
    const bool amf3_result = flex || result.has_flag(amf::value::avmplus);
    const ordered_json out = amf3_result ? w.amf3(result) : w.amf0(result);
    if (fault) {
      std::cerr << "fault: " << out.dump(1, ' ', false, ordered_json::error_handler_t::replace)
                << "\n";
      return 1;
    }
    std::cout << out.dump(1, ' ', false, ordered_json::error_handler_t::replace) << "\n";
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
