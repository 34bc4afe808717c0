// Typed JSON: the lossless JSON rendering of AMF values (docs/typed-json.md), both
// ways, on nlohmann::ordered_json (key order is wire order). A separate target, `amf::json`,
// so the codec core stays free of dependencies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "amf/externalizable.hpp"
#include "amf/packet.hpp"
#include "amf/value.hpp"

namespace amf::json {

using ordered_json = nlohmann::ordered_json;

/// A rendering that does not follow the typed JSON rules; `what()` starts with the JSON
/// path of the offending element ("/bodies/0/value/3: ...").
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Renders values. `{"$ref": n}` indices follow the reference tables a decoder builds, so
/// consecutive calls share tables until `reset` (as values of one stream do).
class writer {
 public:
  /// `max_bytes` bounds what a rendering may hold (about its JSON text's size): a packet of a
  /// few bytes can reference one long string a million times, and each is written in full.
  /// Past it, `error`.
  explicit writer(std::size_t max_bytes = SIZE_MAX) : left_(max_bytes), max_(max_bytes) {}
  ordered_json amf0(const value& v) { return render(v, false, false); }
  /// The argument array of a request body: not counted in the AMF0 table.
  ordered_json amf0_arguments(const value& v) { return render(v, false, true); }
  ordered_json amf3(const value& v) { return render(v, true, false); }
  ordered_json packet(const amf::packet& p);
  void reset();

 private:
  ordered_json render(const value& v, bool amf3, bool arguments);
  ordered_json external(const external_node& e);
  ordered_json members(const object_node& o, bool amf3, ordered_json j);
  bool reference(const node* n, bool amf3, ordered_json& j);
  /// Counts `bytes` of rendering against max_bytes.
  void charge(std::size_t bytes);

  std::unordered_map<const node*, std::uint32_t> amf0_, amf3_;
  std::size_t left_, max_;
};

/// Builds values from renderings into a document. Consecutive calls share reference tables
/// until `reset`; `seed` starts the tables from a decoder's (for values that follow a prefix).
class reader {
 public:
  explicit reader(document& doc, const class_registry* classes = nullptr)
      : doc_(doc), classes_(classes ? classes : &class_registry::builtin()) {}

  value amf0(const ordered_json& j);
  value amf0_arguments(const ordered_json& j);
  value amf3(const ordered_json& j);
  amf::packet packet(const ordered_json& j);
  void reset();
  void seed(std::span<node* const> amf0_objects, std::span<node* const> amf3_objects);

 private:
  value parse(const ordered_json& j, bool amf3, bool arguments = false);
  value special(const ordered_json& j, const std::string& key, bool amf3);
  value object(const ordered_json& j, bool amf3);
  value external(const ordered_json& j, traits* t);
  [[noreturn]] void fail(const std::string& message) const;
  /// `v` as a T, if it is an integer that T holds; else `fail` (nlohmann's get<T> would
  /// convert a double or a wider integer unchecked, undefined for out-of-range doubles).
  template <class T>
  T integer(const ordered_json& v) const;

  struct path_segment;
  document& doc_;
  const class_registry* classes_;
  std::vector<node*> amf0_, amf3_;
  std::vector<std::string> path_;
};

std::string to_hex(std::span<const std::byte> b);
/// Throws `error` on odd length or a non-hex digit.
std::string from_hex(std::string_view hex);

}  // namespace amf::json
