#include "amf/packet.hpp"

#include "amf/encode.hpp"
#include "reader.hpp"
#include "writer.hpp"

namespace amf {

bool body::is_request() const noexcept {
  for (std::string_view suffix : {"/onResult", "/onStatus", "/onDebugEvents"}) {
    if (target.ends_with(suffix)) return false;
  }
  return true;
}

namespace {

bool read_packet(detail::reader& r, packet& p) {
  std::uint16_t count;
  if (!r.u16(p.version)) return false;
  if (p.version != 0 && p.version != 1 && p.version != 3) {
    return r.fail_at(errc::bad_packet_version, 0);
  }
  if (!r.u16(count)) return false;
  // Each header takes at least 2 + 1 + 4 + 1 bytes.
  if (count > r.remaining() / 8) return r.fail(errc::length_exceeds_input);
  p.headers.resize(count);
  for (auto& h : p.headers) {
    std::uint8_t mu;
    r.reset_tables();
    if (!r.utf8_u16(h.name) || !r.u8(mu) || !r.u32(h.length) || !r.amf0(h.val)) return false;
    h.must_understand = mu != 0;
  }
  if (!r.u16(count)) return false;
  if (count > r.remaining() / 9) return r.fail(errc::length_exceeds_input);
  p.bodies.resize(count);
  for (auto& b : p.bodies) {
    r.reset_tables();
    if (!r.utf8_u16(b.target) || !r.utf8_u16(b.response) || !r.u32(b.length)) return false;
    if (!r.amf0(b.val, b.is_request())) return false;
  }
  return true;
}

}  // namespace

packet decode_packet(std::span<const std::byte> in, document& doc, decode_error& ec,
                     const decode_options& opt) {
  detail::reader r(in, doc, opt);
  packet p(doc.resource());
  if (!read_packet(r, p)) {
    ec = r.error();
    return packet(doc.resource());
  }
  ec = {};
  return p;
}

packet decode_packet(std::span<const std::byte> in, document& doc, const decode_options& opt) {
  decode_error ec;
  packet p = decode_packet(in, doc, ec, opt);
  if (ec) throw decode_exception(ec);
  return p;
}

void encode_packet(const packet& p, std::string& out, length_fields lengths) {
  encode_packet(p, out, lengths, static_cast<std::size_t>(-1), nullptr);
}

void encode_packet(const packet& p, std::string& out, length_fields lengths, std::size_t max_bytes,
                   const std::function<body(std::size_t)>& oversize) {
  detail::writer w(out);
  w.u16(p.version);
  // Writes a length placeholder, the value, then the real length over the placeholder.
  auto value_with_length = [&](std::uint32_t given, const value& v, bool arguments) {
    w.reset_tables();
    const std::size_t at = w.size();
    w.u32(given);
    w.amf0(v, arguments);
    if (lengths == length_fields::computed) {
      w.patch_u32(at, static_cast<std::uint32_t>(w.size() - at - 4));
    }
  };
  auto write_body = [&](const body& b) {
    w.utf8_u16(b.target);
    w.utf8_u16(b.response);
    value_with_length(b.length, b.val, b.is_request());
  };
  w.u16(static_cast<unsigned>(p.headers.size()));
  for (const auto& h : p.headers) {
    w.utf8_u16(h.name);
    w.u8(h.must_understand ? 1 : 0);
    value_with_length(h.length, h.val, false);
  }
  w.u16(static_cast<unsigned>(p.bodies.size()));
  std::size_t wasted = 0;
  for (std::size_t i = 0; i < p.bodies.size(); ++i) {
    if (!oversize) {
      write_body(p.bodies[i]);
      continue;
    }
    const std::size_t at = w.size();
    if (wasted < max_bytes) {
      try {
        w.limit(max_bytes);
        write_body(p.bodies[i]);
        continue;
      } catch (const detail::limit_reached&) {
        wasted += w.size() - at;
        w.truncate(at);
      }
    }
    w.limit(static_cast<std::size_t>(-1));  // the substitute is written whole
    write_body(oversize(i));
  }
}

}  // namespace amf
