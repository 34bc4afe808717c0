// The EchoTest cases (docs/tools.md, "EchoTest"), built as Flash Player would send them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "amf/value.hpp"

namespace amfgate::echotest {

enum class mode { amf0, amf3, flex };

struct echo_case {
  std::string name;
  bool amf3_only;
  /// Builds the value; `amf3` selects Flash's AMF3 forms (integers, sealed traits).
  std::function<amf::value(amf::document& doc, bool amf3)> make;
};

namespace detail {

// A Number as Flash encodes it: an AMF3 int when integral and within 29 bits, else a double.
inline amf::value number(double d, bool amf3) {
  if (amf3 && std::isfinite(d) && std::trunc(d) == d && !(d == 0 && std::signbit(d)) &&
      d >= -(1 << 28) && d < (1 << 28)) {
    return amf::value::integer(static_cast<std::int32_t>(d));
  }
  return amf::value::number(d);
}

inline amf::value array(amf::document& doc, std::initializer_list<amf::value> items) {
  amf::array_node* a = doc.array(items.size());
  for (const auto& v : items) a->dense.push_back(v);
  return amf::value::of(a);
}

inline amf::value twice(amf::document& doc, amf::value v) {
  return array(doc, {v, v});
}

inline amf::value repeated_digits(amf::document& doc, std::size_t length) {
  std::string s;
  s.reserve(length);
  while (s.size() < length) s += "0123456789";
  return doc.string(s);
}

constexpr const char* employees =
    "<employees><employee id=\"1\"><name>Jane Doe</name><title>Engineer</title></employee>"
    "<employee id=\"2\"><name>John Roe</name><title>Manager</title></employee></employees>";

inline amf::value remote(amf::document& doc, bool amf3, const char* text, double number) {
  const amf::traits* t =
      amf3 ? doc.make_traits("org.red5.demos.echo.RemoteClass", false, {"attribute1", "attribute2"})
           : doc.make_traits("org.red5.demos.echo.RemoteClass", true);
  amf::object_node* o = doc.object(t);
  if (amf3) {
    o->sealed[0] = doc.string(text);
    o->sealed[1] = detail::number(number, true);
  } else {
    o->dynamic.push_back({"attribute1", doc.string(text)});
    o->dynamic.push_back({"attribute2", amf::value::number(number)});
  }
  return amf::value::of(o);
}

inline amf::value anonymous(amf::document& doc,
                            std::initializer_list<std::pair<const char*, amf::value>> members) {
  amf::object_node* o = doc.object();
  for (const auto& [k, v] : members) o->dynamic.push_back({k, v});
  return amf::value::of(o);
}

}  // namespace detail

/// Every case, in the order of echotest.md.
std::vector<echo_case> all_cases();

}  // namespace amfgate::echotest
