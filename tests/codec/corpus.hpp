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
    c.add("ExternalizableTest", ops_codec({external_op::double_, external_op::double_}));
    return c;
  }();
  return r;
}

inline std::span<const std::byte> bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace amf::test

namespace amf::test {

/// "0a 0b 01" -> bytes (spaces allowed).
inline std::string hex(std::string_view h) {
  std::string digits;
  for (char c : h) {
    if (c != ' ') digits += c;
  }
  return json::from_hex(digits);
}

/// Counts what a document's arena takes from upstream.
class counting_resource : public std::pmr::memory_resource {
 public:
  std::size_t total = 0;

 private:
  void* do_allocate(std::size_t n, std::size_t a) override {
    total += n;
    return std::pmr::new_delete_resource()->allocate(n, a);
  }
  void do_deallocate(void* p, std::size_t n, std::size_t a) override {
    std::pmr::new_delete_resource()->deallocate(p, n, a);
  }
  bool do_is_equal(const memory_resource& o) const noexcept override { return this == &o; }
};

}  // namespace amf::test
