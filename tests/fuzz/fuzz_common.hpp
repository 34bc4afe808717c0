// Round-trip fuzzing: decode; if that succeeds, encode, decode again and require the same
// value (and a typed JSON rendering that does not throw), then encode once more and require the
// same bytes: what amfgate writes reads back to what it wrote. The input is copied to an
// allocation of its own size so that the sanitizers see any read past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/json.hpp"
#include "amf/packet.hpp"

namespace amf::fuzz {

inline decode_options options() {
  decode_options o;
  o.max_depth = 64;
  o.keep_unknown_externals = true;
  return o;
}

[[noreturn]] inline void die(const char* what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

enum class format { amf0, amf3, packet };

inline void round_trip(const std::uint8_t* data, std::size_t size, format f) {
  auto copy = std::make_unique<std::byte[]>(size);
  if (size) std::memcpy(copy.get(), data, size);
  const std::span<const std::byte> in(copy.get(), size);

  document doc;
  decode_error ec;
  std::string out;
  json::writer w;
  if (f == format::packet) {
    packet p = decode_packet(in, doc, ec, options());
    if (ec) {
      if (ec.offset > size) die("error offset beyond the input");
      return;
    }
    w.packet(p);
    encode_packet(p, out, length_fields::as_given);
    document doc2;
    packet q = decode_packet(as_bytes(out), doc2, ec, options());
    if (ec) die("re-encoded packet does not decode");
    if (p.headers.size() != q.headers.size() || p.bodies.size() != q.bodies.size()) {
      die("packet shape changed");
    }
    for (std::size_t i = 0; i < p.headers.size(); ++i) {
      if (!equivalent(p.headers[i].val, q.headers[i].val)) die("header value changed");
    }
    for (std::size_t i = 0; i < p.bodies.size(); ++i) {
      if (p.bodies[i].target != q.bodies[i].target ||
          !equivalent(p.bodies[i].val, q.bodies[i].val)) {
        die("body changed");
      }
    }
    std::string again;
    encode_packet(q, again, length_fields::as_given);
    if (again != out) die("encode, decode, encode: the two packets differ");
    return;
  }
  const bool amf3 = f == format::amf3;
  value v = amf3 ? decode_amf3(in, doc, ec, options()) : decode_amf0(in, doc, ec, options());
  if (ec) {
    if (ec.offset > size) die("error offset beyond the input");
    return;
  }
  amf3 ? w.amf3(v) : w.amf0(v);
  amf3 ? encode_amf3(v, out) : encode_amf0(v, out);
  document doc2;
  value back = amf3 ? decode_amf3(as_bytes(out), doc2, ec, options())
                    : decode_amf0(as_bytes(out), doc2, ec, options());
  if (ec) die("re-encoded value does not decode");
  if (!equivalent(v, back)) die("value changed in a round trip");
  std::string again;
  amf3 ? encode_amf3(back, again) : encode_amf0(back, again);
  if (again != out) die("encode, decode, encode: the two encodings differ");
}

}  // namespace amf::fuzz
