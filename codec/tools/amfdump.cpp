// amfdump: AMF bytes to typed JSON and back.
//
//   amfdump [--packet|--amf0|--amf3] FILE|-     print one JSON document on standard output
//   amfdump --encode [--packet|--amf0|--amf3] FILE.json|-   write the AMF bytes
//
// Without a flag the input kind is detected: a packet if it decodes as one, else a bare
// AMF0 value, else a bare AMF3 value (JSON: a packet if it has "version" and "bodies",
// AMF3 if it uses AMF3-only renderings, else AMF0). Errors go to standard error with the
// error code and byte offset, and the exit status is 1 (2 for usage errors).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/json.hpp"
#include "amf/packet.hpp"

namespace {

enum class kind { packet, amf0, amf3 };

int usage() {
  std::cerr << "usage: amfdump [--packet|--amf0|--amf3] FILE|-\n"
               "       amfdump --encode [--packet|--amf0|--amf3] FILE.json|-\n";
  return 2;
}

std::optional<std::string> slurp(const std::string& name) {
  if (name == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream f(name, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// True if the rendering uses a form that only AMF3 has (outside any "$amf3").
bool looks_amf3(const amf::json::ordered_json& j) {
  if (j.is_array()) {
    for (const auto& e : j) {
      if (looks_amf3(e)) return true;
    }
    return false;
  }
  if (!j.is_object() || j.empty()) return false;
  const std::string& first = j.begin().key();
  if (first == "$amf3") return false;
  for (const char* k : {"$int", "$bytes", "$xml", "$assoc", "$vector", "$dictionary"}) {
    if (first == k) return true;
  }
  if (j.contains("$sealed") || j.contains("$externalizable")) return true;
  for (const auto& [k, v] : j.items()) {
    if (looks_amf3(v)) return true;
  }
  return false;
}

int dump(std::optional<kind> k, const std::string& input) {
  amf::document doc;
  amf::decode_options opt;
  opt.keep_unknown_externals = true;
  const auto bytes = amf::as_bytes(input);
  amf::decode_error ec;
  amf::json::writer w;
  amf::json::ordered_json out;
  auto try_packet = [&] {
    amf::packet p = amf::decode_packet(bytes, doc, ec, opt);
    if (!ec) out = w.packet(p);
  };
  auto try_value = [&](bool amf3) {
    amf::value v =
        amf3 ? amf::decode_amf3(bytes, doc, ec, opt) : amf::decode_amf0(bytes, doc, ec, opt);
    if (!ec) out = amf3 ? w.amf3(v) : w.amf0(v);
  };
  if (k == kind::packet) {
    try_packet();
  } else if (k) {
    try_value(*k == kind::amf3);
  } else {
    try_packet();
    if (ec) try_value(false);
    if (ec) try_value(true);
  }
  if (ec) {
    std::cerr << "amfdump: " << ec.code.message() << " (" << ec.code.value() << ") at byte "
              << ec.offset << "\n";
    return 1;
  }
  std::cout << out.dump(1, ' ', false, amf::json::ordered_json::error_handler_t::replace) << "\n";
  return 0;
}

int encode(std::optional<kind> k, const std::string& input) {
  amf::json::ordered_json j;
  try {
    j = amf::json::ordered_json::parse(input);
  } catch (const std::exception& e) {
    std::cerr << "amfdump: not JSON: " << e.what() << "\n";
    return 1;
  }
  if (!k) {
    k = j.is_object() && j.contains("version") && j.contains("bodies") ? kind::packet
        : looks_amf3(j)                                                ? kind::amf3
                                                                       : kind::amf0;
  }
  amf::document doc;
  amf::json::reader r(doc);
  std::string out;
  try {
    if (k == kind::packet) {
      amf::encode_packet(r.packet(j), out, amf::length_fields::as_given);
    } else if (k == kind::amf3) {
      amf::encode_amf3(r.amf3(j), out);
    } else {
      amf::encode_amf0(r.amf0(j), out);
    }
  } catch (const std::exception& e) {
    std::cerr << "amfdump: " << e.what() << "\n";
    return 1;
  }
  std::cout.write(out.data(), static_cast<std::streamsize>(out.size()));
  return std::cout.good() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<kind> k;
  bool to_amf = false;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--packet") {
      k = kind::packet;
    } else if (a == "--amf0") {
      k = kind::amf0;
    } else if (a == "--amf3") {
      k = kind::amf3;
    } else if (a == "--encode") {
      to_amf = true;
    } else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (file.empty() && (a == "-" || !a.starts_with('-'))) {
      file = a;
    } else {
      return usage();
    }
  }
  if (file.empty()) return usage();
  const auto input = slurp(file);
  if (!input) {
    std::cerr << "amfdump: cannot read " << file << "\n";
    return 1;
  }
  return to_amf ? encode(k, *input) : dump(k, *input);
}
