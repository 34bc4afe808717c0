// What the npm package `amf` 0.1.0 (an AMF0 reader) should read from an echo of a value,
// spelled the way peer/check.js spells what it read, so the two can be compared as text.
#pragma once

#include <string>

#include "amf/value.hpp"

namespace amfgate::echotest {

/// The peer's reading of `v` sent as AMF0, or "unreadable: <why>" when its AMF0 form holds
/// what the package cannot read (a reference, a long string, an XMLDocument, AMF3).
///
/// Spelling: undefined, null, true, false; NaN; n<16 hex digits of the double>;
/// s<hex of the UTF-8 bytes>; d<16 hex digits of the milliseconds>;
/// [e,e,...;name=v,...] for arrays (JavaScript's view of an ECMA array: indices, `length`,
/// other names); alias{name=v,...} for objects (no alias when anonymous).
std::string peer_rendering(const amf::value& v);

}  // namespace amfgate::echotest
