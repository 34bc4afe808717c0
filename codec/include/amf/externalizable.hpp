// Class codecs for IExternalizable objects, and the registry that carries them.
//
// An externalizable payload has no length on the wire, so it can only be read by a codec
// that knows the class. The registry maps class aliases to codecs; it travels in
// `decode_options` and is never global. Writing needs no codec: a decoded or built
// `external_node` says how its payload is held (`external_node::form`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amf/error.hpp"
#include "amf/value.hpp"

namespace amf {

namespace detail {
class reader;
}

/// What a class codec reads its payload from: raw bytes and nested AMF3 values that share
/// the enclosing reference tables. Every call returns false once an error is recorded.
class external_reader {
 public:
  explicit external_reader(detail::reader& r) : r_(r) {}
  /// The next `n` bytes (a view into the input).
  bool bytes(std::size_t n, std::span<const std::byte>& out);
  /// Big-endian unsigned integer of 1, 2 or 4 bytes.
  bool uint(std::size_t width, std::uint32_t& out);
  /// One nested AMF3 value (IDataInput.readObject).
  bool object(value& out);
  /// Records `e` at the current offset; returns false.
  bool fail(errc e);
  document& doc();
  /// True if another value can be read (bytes remain).
  bool more() const;

 private:
  detail::reader& r_;
};

class class_codec {
 public:
  virtual ~class_codec() = default;
  /// Reads the payload of `out`, whose traits are set and which is already entered in the
  /// object table. On failure returns false with the error recorded through `in`.
  virtual bool read(external_reader& in, external_node& out) const = 0;
};

/// The Flex collections, each an externalizable wrapper of one array.
inline constexpr std::string_view array_collection_alias = "flex.messaging.io.ArrayCollection";
inline constexpr std::string_view array_list_alias = "flex.messaging.io.ArrayList";

/// Payload = one AMF3 value (ArrayCollection, ArrayList, ObjectProxy).
std::shared_ptr<const class_codec> single_value_codec();

/// BlazeDS small messages. `third` is the level after Abstract and Async: 'K' for
/// AcknowledgeMessageExt (DSK), 'C' for CommandMessageExt (DSC), 0 for AsyncMessageExt (DSA).
std::shared_ptr<const class_codec> small_message_codec(char third);

/// One step of a fixed IDataInput layout.
struct op_spec {
  op_spec(external_op::kind_t k, std::uint32_t n = 0, std::string cs = {})
      : kind(k), length(n), charset(std::move(cs)) {}
  external_op::kind_t kind;
  std::uint32_t length = 0;  ///< bytes, for utf_bytes and multi_byte
  std::string charset;       ///< for multi_byte: "utf-8", "iso-8859-1" (or "latin1"), "us-ascii"
};
/// A payload read as a fixed sequence of IDataInput calls (kept as `external_op`s).
std::shared_ptr<const class_codec> ops_codec(std::vector<op_spec> layout);

/// Class alias -> codec.
class class_registry {
 public:
  /// ArrayCollection, ArrayList, ObjectProxy (flex.messaging.io.*) and DSK, DSA, DSC.
  static const class_registry& builtin();

  class_registry& add(std::string alias, std::shared_ptr<const class_codec> codec);
  const class_codec* find(std::string_view alias) const;

 private:
  std::map<std::string, std::shared_ptr<const class_codec>, std::less<>> codecs_;
};

}  // namespace amf
