// echotest: the EchoTest cases against any AMF gateway (docs/tools.md, "EchoTest").
//
//   echotest URL [--modes amf0,amf3,flex] [--user U --password P] [--only SUBSTRING]
//            [--save-amf0 DIR]
//
// Sends every case in each mode it belongs to, as Flash Player encodes it, and checks the
// answer strictly: type, value (doubles bit for bit), alias, traits and sharing; in the
// NetConnection modes also that the answer's value bytes are the request's argument bytes.
// The AMF0 mode also replays captured Flash Player requests as they are and requires the
// whole answer, byte for byte. --save-amf0 writes each AMF0 answer (and what it should hold)
// to DIR for peer/check.js, the independent reader.
// Prints one line per case and mode, then "N passed, M failed"; exits 1 on any failure.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/flex.hpp"
#include "amf/json.hpp"
#include "amf/packet.hpp"
#include "amfgate/server/client.hpp"
#include "amfgate/services/builtin.hpp"
#include "captured.hpp"
#include "cases.hpp"
#include "peer.hpp"

namespace {

using amfgate::echotest::mode;

// The bytes of the first body's value in a response packet (after any headers).
std::string response_value_bytes(const std::string& packet, const amf::decode_options& options) {
  amf::document doc;
  const auto in = amf::as_bytes(packet);
  std::size_t at = 2;
  auto u16 = [&] {
    if (at + 2 > packet.size()) throw std::runtime_error("short packet");
    const unsigned v =
        (static_cast<unsigned char>(packet[at]) << 8) | static_cast<unsigned char>(packet[at + 1]);
    at += 2;
    return v;
  };
  const unsigned headers = u16();
  for (unsigned h = 0; h < headers; ++h) {
    at += u16();  // name
    at += 1 + 4;  // must-understand, length
    amf::decoder d(in.subspan(at), doc, options);
    amf::decode_error ec;
    d.read_amf0(ec);
    if (ec) throw std::runtime_error("header: " + ec.message());
    at += d.offset();
  }
  if (u16() < 1) throw std::runtime_error("no body");
  at += u16();  // target
  at += u16();  // response
  at += 4;      // length
  amf::decoder d(in.subspan(at), doc, options);
  amf::decode_error ec;
  d.read_amf0(ec);
  if (ec) throw std::runtime_error("body: " + ec.message());
  return packet.substr(at, d.offset());
}

std::string shown(const amf::value& v, bool amf3) {
  amf::json::writer w;
  std::string s = (amf3 ? w.amf3(v) : w.amf0(v))
                      .dump(-1, ' ', false, amf::json::ordered_json::error_handler_t::replace);
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

struct runner {
  amfgate::client::url url;
  amfgate::client::http_client http;
  std::string user, password;
  int call = 0;
  std::string dsid;
  amf::decode_options options;
  amfgate::services::registry classes;  // for the Red5 ExternalizableClass codec
  std::filesystem::path save_dir;       // --save-amf0
  int saved = 0;

  runner(const amfgate::client::url& u, std::string usr, std::string pw)
      : url(u), http(u.host, u.port), user(std::move(usr)), password(std::move(pw)) {
    amfgate::services::add_echo_service(classes);
    options.classes = &classes.classes();
  }

  std::string post(const std::string& body) {
    auto res = http.post(url.target, body);
    if (res.status != 200) {
      throw std::runtime_error("HTTP " + std::to_string(res.status) + ": " +
                               res.body.substr(0, 200));
    }
    return res.body;
  }

  // Ping, then log in as the original client does when a user name was typed.
  void connect_flex() {
    amf::document doc;
    // The decoded replies are views into these bytes: keep them for the function's length.
    std::string pong, login_bytes;
    auto reply = [&](const std::string& bytes) {
      amf::packet p = amf::decode_packet(amf::as_bytes(bytes), doc, options);
      return amf::flex::read(p.bodies.at(0).val, doc).value();
    };
    pong = post(amfgate::client::flex_request(
        std::vector{amfgate::client::flex_command(doc, amf::flex::operation::client_ping, "")}));
    auto ack = reply(pong);
    if (ack.header("DSId").kind() == amf::type::string) dsid = ack.header("DSId").as_string();
    if (!user.empty()) {
      login_bytes = post(amfgate::client::flex_request(std::vector{
          amfgate::client::flex_command(doc, amf::flex::operation::login, dsid, user, password)}));
      auto login = reply(login_bytes);
      std::cout << "login as \"" << user << "\": "
                << (login.kind == amf::flex::kind::error ? std::string(login.fault_code)
                                                         : std::string("success"))
                << "\n";
    }
  }

  // Writes NNN.amf (the answer), NNN.expect (the case's name, then the peer's expected
  // reading, or "=request" to compare with its reading of NNN.request).
  void save(const std::string& name, const std::string& answer, const std::string& expect,
            const std::string& request = {}) {
    if (save_dir.empty()) return;
    char stem[16];
    std::snprintf(stem, sizeof stem, "%03d", ++saved);
    auto write = [&](const char* ext, const std::string& bytes) {
      std::ofstream out(save_dir / (std::string(stem) + ext), std::ios::binary);
      out << bytes;
      if (!out) throw std::runtime_error("cannot write to " + save_dir.string());
    };
    write(".amf", answer);
    write(".expect", name + "\n" + expect + "\n");
    if (!request.empty()) write(".request", request);
  }

  // A captured request, sent as it is: the answer must be exactly the Flash Player response
  // to it, `00 00 00 00 00 01 | "/N/onResult" | "null" | ff ff ff ff | argument bytes`.
  std::string run_captured(const amfgate::echotest::captured_request& c) {
    const std::string request = amfgate::echotest::request_bytes(c);
    auto u16 = [&](std::size_t at) {
      return (static_cast<unsigned char>(request.at(at)) << 8) |
             static_cast<unsigned char>(request.at(at + 1));
    };
    const std::size_t response_at = 8 + u16(6);  // after version, counts and the target
    const std::string response_uri = request.substr(response_at + 2, u16(response_at));
    const std::size_t value_at = response_at + 2 + response_uri.size() + 4 + 5;  // 0a 00000001
    const std::string value = request.substr(value_at);
    const std::string target = response_uri + "/onResult";
    std::string expected("\0\0\0\0\0\1", 6);
    expected += static_cast<char>(target.size() >> 8);
    expected += static_cast<char>(target.size() & 0xff);
    expected += target;
    expected += std::string("\0\4null\xff\xff\xff\xff", 10);
    expected += value;
    const std::string answer = post(request);
    save("captured: " + c.name, answer, "=request", request);
    if (answer == expected) return {};
    std::size_t i = 0;
    while (i < answer.size() && i < expected.size() && answer[i] == expected[i]) ++i;
    if (i == answer.size() || i == expected.size()) {
      return "the answer is " + std::to_string(answer.size()) + " bytes, Flash expects " +
             std::to_string(expected.size());
    }
    char why[96];
    std::snprintf(why, sizeof why, "answer byte %zu is %02x, Flash expects %02x", i,
                  static_cast<unsigned char>(answer[i]), static_cast<unsigned char>(expected[i]));
    return why;
  }

  // Returns "" on success, else what differed.
  std::string run(const amfgate::echotest::echo_case& c, mode m) {
    amf::document doc;
    const bool amf3 = m != mode::amf0;
    const amf::value sent = c.make(doc, amf3);
    amf::document rdoc;
    if (m == mode::flex) {
      const std::string answer = post(amfgate::client::flex_request(
          std::vector{amfgate::client::flex_remoting(doc, "Red5Echo", "echo", {&sent, 1}, dsid)}));
      amf::packet p = amf::decode_packet(amf::as_bytes(answer), rdoc, options);
      auto msg = amf::flex::read(p.bodies.at(0).val, rdoc);
      if (!msg) return "the answer is not a Flex message";
      if (msg->kind == amf::flex::kind::error) {
        return "fault " + std::string(msg->fault_code) + ": " + std::string(msg->fault_string);
      }
      if (!amf::equivalent(sent, msg->body)) {
        return "sent " + shown(sent, true) + ", got " + shown(msg->body, true);
      }
      return {};
    }
    const std::string request =
        amfgate::client::netconnection_request("echo", {&sent, 1}, amf3, user, password, ++call);
    const std::string answer = post(request);
    if (!amf3) save(c.name, answer, amfgate::echotest::peer_rendering(sent));
    amf::packet p = amf::decode_packet(amf::as_bytes(answer), rdoc, options);
    if (p.bodies.empty()) return "no body in the answer";
    const auto& b = p.bodies[0];
    if (b.target != "/" + std::to_string(call) + "/onResult") {
      return "answered " + std::string(b.target) + ": " + shown(b.val, amf3);
    }
    if (amf3 != b.val.has_flag(amf::value::avmplus)) return "answered in the other encoding";
    if (!amf::equivalent(sent, b.val)) {
      return "sent " + shown(sent, amf3) + ", got " + shown(b.val, amf3);
    }
    // A correct echo re-emits the argument's bytes (the argument array is not in the
    // request's reference table, so the value's own table indices are the same).
    std::string expected;
    amf::encoder e(expected);
    e.write_amf0(amf3 ? sent.with_flags(sent.flags() | amf::value::avmplus) : sent);
    const std::string got = response_value_bytes(answer, options);
    if (got != expected) {
      std::size_t i = 0;
      while (i < got.size() && i < expected.size() && got[i] == expected[i]) ++i;
      return "value bytes differ from the request's at byte " + std::to_string(i);
    }
    return {};
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string url_text, user = "echotest", password = "echotest", only, save_dir;
  std::vector<mode> modes{mode::amf0, mode::amf3, mode::flex};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--modes" && i + 1 < argc) {
      modes.clear();
      std::stringstream list(argv[++i]);
      for (std::string m; std::getline(list, m, ',');) {
        if (m == "amf0")
          modes.push_back(mode::amf0);
        else if (m == "amf3")
          modes.push_back(mode::amf3);
        else if (m == "flex")
          modes.push_back(mode::flex);
        else {
          std::cerr << "echotest: unknown mode " << m << "\n";
          return 2;
        }
      }
    } else if (a == "--user" && i + 1 < argc) {
      user = argv[++i];
    } else if (a == "--password" && i + 1 < argc) {
      password = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--save-amf0" && i + 1 < argc) {
      save_dir = argv[++i];
    } else if (!a.starts_with("--") && url_text.empty()) {
      url_text = a;
    } else {
      url_text.clear();
      break;
    }
  }
  if (url_text.empty()) {
    std::cerr << "usage: echotest URL [--modes amf0,amf3,flex] [--user U --password P] "
                 "[--only SUBSTRING] [--save-amf0 DIR]\n";
    return 2;
  }
  int passed = 0, failed = 0;
  auto report = [&](const char* mode_name, const std::string& name, const std::string& why) {
    std::cout << (why.empty() ? "PASS " : "FAIL ") << mode_name << "  " << name
              << (why.empty() ? "" : ": " + why) << "\n";
    (why.empty() ? passed : failed)++;
  };
  auto attempt = [](auto&& run) {
    try {
      return run();
    } catch (const std::exception& e) {
      return std::string("error: ") + e.what();
    }
  };
  try {
    const auto url = amfgate::client::url::parse(url_text);
    const auto cases = amfgate::echotest::all_cases();
    for (mode m : modes) {
      runner r(url, user, password);
      r.save_dir = save_dir;
      const char* name = m == mode::amf0 ? "amf0" : m == mode::amf3 ? "amf3" : "flex";
      if (m == mode::flex) r.connect_flex();
      for (const auto& c : cases) {
        if ((c.amf3_only && m == mode::amf0) || c.name.find(only) == std::string::npos) continue;
        report(name, c.name, attempt([&] { return r.run(c, m); }));
      }
      if (m != mode::amf0) continue;
      for (const auto& c : amfgate::echotest::captured_requests()) {
        if (c.name.find(only) == std::string::npos) continue;
        report(name, "captured: " + c.name, attempt([&] { return r.run_captured(c); }));
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "echotest: " << e.what() << "\n";
    return 1;
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
