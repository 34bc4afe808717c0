// The plain JSON of the bridge: AMF values as a backend's developers would write them, and
// back (README, "The JSON a backend sees").
//
//   AMF                                  JSON
//   null, undefined                      null
//   true/false, int, Number, String      themselves (NaN and infinities: null)
//   Date                                 "2026-12-06T17:43:54.123Z" (ISO 8601, UTC)
//   Array (dense), Vector.<*>            [...]
//   Array (associative), ECMA array      {...} (a dense ECMA array: [...])
//   anonymous Object, ObjectProxy        {...}
//   typed Object                         {"_explicitType": "com.example.User", ...}
//   ArrayCollection, ArrayList           [...] (their source)
//   ByteArray                            {"_bytes": "<base64>"}
//   XML, XMLDocument                     "<text/>"
//   Dictionary                           {"<key as text>": ...}
//
// Back, from JSON, the same rules the other way; a date goes back as {"_date": "<ISO 8601>"}
// or {"_date": <milliseconds since 1970>}, since a plain string stays a string. A shared or
// cyclic graph is written once per place it appears; a cycle is an error.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "amf/value.hpp"

namespace amfgate::bridge {

using ordered_json = nlohmann::ordered_json;

/// Input that the mapping refuses; what() starts with the JSON path ("/args/0/name: ...").
class mapping_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct mapping_limits {
  std::size_t max_depth = 128;  ///< nesting, both ways
  /// About the JSON text's size, to AMF: one string referenced a million times by a packet of a
  /// few bytes is written a million times.
  std::size_t max_bytes = std::size_t{16} << 20;
};

/// Values as plain JSON, all of them within one budget of `limits.max_bytes` (a call's
/// arguments and headers together). `render` throws mapping_error past the limits or at a
/// cycle.
class plain_writer {
 public:
  explicit plain_writer(const mapping_limits& limits) : limits_(limits) {}
  ordered_json render(const amf::value& v);

 private:
  mapping_limits limits_;
  std::size_t used_ = 0;
};

/// `v` alone as plain JSON: plain_writer(limits).render(v).
ordered_json to_plain(const amf::value& v, const mapping_limits& limits = {});
/// Plain JSON as a value built in `doc`. Throws mapping_error past max_depth or at a
/// malformed _bytes or _date.
amf::value from_plain(amf::document& doc, const ordered_json& j, const mapping_limits& limits = {});

/// Milliseconds since 1970 as "YYYY-MM-DDTHH:MM:SS.mmmZ" ("" past ECMAScript's dates, or NaN;
/// years past 9999 have more digits); and back (any offset, "Z" or
/// "+hh:mm", fraction optional), nullopt if it is not one.
std::string iso8601(double millis);
std::optional<double> parse_iso8601(std::string_view text);

}  // namespace amfgate::bridge
