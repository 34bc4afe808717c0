// AMF remoting packets (the HTTP body of NetConnection and RemoteObject calls).
//
// Reference tables are reset for every header and every body; all 0x11 switches inside one
// header or body share one AMF3 context; the argument array of a request body is not in the
// AMF0 reference table. Length fields on the wire are kept but never trusted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amf/decode.hpp"
#include "amf/value.hpp"

namespace amf {

inline constexpr std::uint32_t unknown_length = 0xFFFFFFFF;

struct header {
  std::string_view name;
  bool must_understand = false;
  std::uint32_t length = unknown_length;  ///< as found on the wire
  value val;
};

struct body {
  std::string_view target;                ///< "Service.method", "null" (Flex), or "/1/onResult"
  std::string_view response;              ///< "/1" in requests
  std::uint32_t length = unknown_length;  ///< as found on the wire
  value val;

  /// A body whose target ends in /onResult, /onStatus or /onDebugEvents is a response;
  /// every other body is a request.
  bool is_request() const noexcept;
};

struct packet {
  explicit packet(std::pmr::memory_resource* r = std::pmr::get_default_resource())
      : headers(r), bodies(r) {}
  std::uint16_t version = 3;
  std::pmr::vector<header> headers;
  std::pmr::vector<body> bodies;
};

/// Decodes a packet; its vectors use the document's arena.
packet decode_packet(std::span<const std::byte> in, document& doc, decode_error& ec,
                     const decode_options& opt = {});
packet decode_packet(std::span<const std::byte> in, document& doc, const decode_options& opt = {});

enum class length_fields {
  computed,  ///< the real byte length of each value
  as_given,  ///< the `length` member of each header and body (to reproduce captured bytes)
};

void encode_packet(const packet& p, std::string& out,
                   length_fields lengths = length_fields::computed);

/// A reply bounded in size: a body that would take `out` past `max_bytes` is written as
/// `oversize(index of the body)` instead (a fault, say), which is not bounded. Encoding stops
/// as soon as a body passes the bound, and once as many bytes as the bound have been thrown
/// away, every later body is `oversize` untried: the work is linear in `max_bytes`.
void encode_packet(const packet& p, std::string& out, length_fields lengths, std::size_t max_bytes,
                   const std::function<body(std::size_t)>& oversize);

}  // namespace amf
