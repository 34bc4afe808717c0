// Decoding AMF0 and AMF3 values.
//
// Each function comes in two forms: one that reports failure through a `decode_error`
// out-parameter (code and byte offset of the bad token) and returns undefined, and one that
// throws `decode_exception`. No input can make the decoder crash, read out of bounds, loop
// or allocate more than a small multiple of the input size.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "amf/error.hpp"
#include "amf/externalizable.hpp"
#include "amf/value.hpp"

namespace amf {

struct decode_options {
  /// Deepest nesting of containers (objects, arrays, vectors, dictionaries, externals).
  std::size_t max_depth = 128;
  /// Values in one document, counted as they are read.
  std::size_t max_elements = std::size_t{1} << 24;
  /// Entries in any one reference table (objects, strings, traits).
  std::size_t max_references = std::size_t{1} << 22;
  /// Bytes in one string, XML text or byte array.
  std::size_t max_string_bytes = std::size_t{64} << 20;
  /// Copy strings and byte arrays into the document instead of viewing the input.
  bool copy_strings = false;
  /// Keep an externalizable object of an unregistered class, with the rest of the input as
  /// its raw payload, instead of failing with `errc::unknown_externalizable`.
  bool keep_unknown_externals = false;
  /// Class codecs for externalizable objects; null means `class_registry::builtin()`.
  const class_registry* classes = nullptr;
};

/// Views text or a buffer as bytes.
inline std::span<const std::byte> as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

/// Reads consecutive values from one input, keeping reference tables between calls until
/// `reset_tables`. The input and the document must outlive the decoder.
class decoder {
 public:
  decoder(std::span<const std::byte> input, document& doc, const decode_options& opt = {});
  ~decoder();
  decoder(const decoder&) = delete;
  decoder& operator=(const decoder&) = delete;

  /// One AMF0 value (0x11 switches into the AMF3 context of this decoder).
  value read_amf0(decode_error& ec);
  /// One AMF0 value; a strict array at the top is not entered in the reference table (the
  /// argument array of a request body).
  value read_amf0_arguments(decode_error& ec);
  /// One AMF3 value.
  value read_amf3(decode_error& ec);
  /// Empties the AMF0 and AMF3 reference tables.
  void reset_tables();

  std::size_t offset() const noexcept;
  bool at_end() const noexcept;
  /// Object reference tables so far (for tools that render `{"$ref": n}`).
  std::span<node* const> amf0_objects() const noexcept;
  std::span<node* const> amf3_objects() const noexcept;

 private:
  std::unique_ptr<detail::reader> r_;
};

/// A whole input holding exactly one value; bytes left over are `errc::trailing_bytes`.
value decode_amf0(std::span<const std::byte> in, document& doc, decode_error& ec,
                  const decode_options& opt = {});
value decode_amf0(std::span<const std::byte> in, document& doc, const decode_options& opt = {});
value decode_amf3(std::span<const std::byte> in, document& doc, decode_error& ec,
                  const decode_options& opt = {});
value decode_amf3(std::span<const std::byte> in, document& doc, const decode_options& opt = {});

}  // namespace amf
