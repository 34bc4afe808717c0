#include "peer.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

namespace amfgate::echotest {

namespace {

struct unreadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string hex(std::string_view bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string hex64(double d) {
  const auto bits = std::bit_cast<std::uint64_t>(d);
  std::string be(8, '\0');
  for (int i = 0; i < 8; ++i) be[i] = static_cast<char>(bits >> (56 - 8 * i));
  return hex(be);
}

// A JavaScript array index: "0" or digits without a leading zero, below 2^32 - 1.
bool array_index(std::string_view k, std::size_t& index) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return false;
  std::uint64_t n = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (n >= 0xffffffffull) return false;
  index = static_cast<std::size_t>(n);
  return true;
}

class renderer {
 public:
  std::string operator()(const amf::value& v) {
    switch (v.kind()) {
      case amf::type::undefined:
        return "undefined";
      case amf::type::null:
        return "null";
      case amf::type::boolean:
        return v.as_bool() ? "true" : "false";
      case amf::type::integer:
      case amf::type::number:
        return std::isnan(v.to_double()) ? "NaN" : "n" + hex64(v.to_double());
      case amf::type::string:
        if (v.has_flag(amf::value::long_string) || v.as_string().size() > 0xffff) {
          throw unreadable("a long string");
        }
        return "s" + hex(v.as_string());
      case amf::type::xml_document:
        throw unreadable("an XMLDocument");
      default:
        break;
    }
    if (v.has_flag(amf::value::avmplus)) throw unreadable("an AMF3 value");
    if (!seen_.insert(v.as_node()).second) throw unreadable("a reference");
    if (auto* d = v.as_date()) return "d" + hex64(d->millis);
    if (auto* a = v.as_array()) return array(*a);
    if (auto* o = v.as_object()) return object(*o);
    throw unreadable("a value with no AMF0 form the package reads");
  }

 private:
  // JavaScript's view of what the package builds: it pushes a strict array's elements, and
  // assigns an ECMA array's members in order (so `length` resizes the array).
  std::string array(const amf::array_node& a) {
    std::vector<std::string> items;
    for (const auto& e : a.dense) items.push_back((*this)(e));
    std::vector<std::string> named;
    for (const auto& m : a.assoc) {
      std::size_t i = 0;
      if (array_index(m.name, i)) {
        if (i >= items.size()) items.resize(i + 1, "undefined");
        items[i] = (*this)(m.val);
      } else if (m.name == "length" && m.val.is_numeric()) {
        items.resize(static_cast<std::size_t>(m.val.to_double()), "undefined");
      } else {
        named.push_back(std::string(m.name) + "=" + (*this)(m.val));
      }
    }
    return "[" + join(items) + (named.empty() ? "" : ";" + join(named)) + "]";
  }

  std::string object(const amf::object_node& o) {
    std::vector<std::string> members;
    for (std::size_t i = 0; i < o.sealed.size(); ++i) {
      members.push_back(std::string(o.cls->sealed[i]) + "=" + (*this)(o.sealed[i]));
    }
    for (const auto& m : o.dynamic) members.push_back(std::string(m.name) + "=" + (*this)(m.val));
    return std::string(o.cls ? o.cls->alias : "") + "{" + join(members) + "}";
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
    return out;
  }

  std::set<const amf::node*> seen_;
};

}  // namespace

std::string peer_rendering(const amf::value& v) {
  try {
    return renderer{}(v);
  } catch (const unreadable& e) {
    return std::string("unreadable: ") + e.what();
  }
}

}  // namespace amfgate::echotest
