// Test helpers: the shared corpus, typed JSON comparison and a registry with the classes
// that corpus fixtures use.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

#include "amf/externalizable.hpp"
#include "amf/json.hpp"

namespace amf::test {

inline std::string shared_dir() {
  return AMFGATE_SHARED_DIR;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline json::ordered_json read_json(const std::string& path) {
  return json::ordered_json::parse(read_file(path));
}

/// Typed JSON equality as amf-json.md defines it: numbers as doubles, key order significant.
inline bool same_rendering(const json::ordered_json& a, const json::ordered_json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same_rendering(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i.key() != j.key() || !same_rendering(i.value(), j.value())) return false;
    }
    return true;
  }
  return a == b;
}

/// The built-in classes plus `ExternalizableTest` of rocketamf's AIR fixtures, whose
/// writeExternal is writeDouble(one), writeDouble(two).
inline const class_registry& corpus_classes() {
  static const class_registry r = [] {
    class_registry c = class_registry::builtin();
    c.add("ExternalizableTest",
          ops_codec({{external_op::double_, 0, ""}, {external_op::double_, 0, ""}}));
    return c;
  }();
  return r;
}

inline std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace amf::test
