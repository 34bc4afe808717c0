// Errors reported by the AMF decoder.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <system_error>

namespace amf {

/// Why a decode failed. Every value comes with the byte offset where the bad token starts
/// (see `decode_error`).
enum class errc {
  /// The input ended inside a value, a header or a length field.
  truncated = 1,
  /// A type marker the format does not define, or one it reserves and nobody writes
  /// (AMF0 movieclip 0x04, recordset 0x0E; 0x09 object-end where a value must start).
  unknown_marker,
  /// A reference index (object, string, trait or AMF0 reference) beyond its table, or one
  /// that names an entry of another kind than its marker says.
  bad_reference,
  /// Values nested deeper than `decode_options::max_depth`.
  depth_exceeded,
  /// A count or size above one of the limits in `decode_options`.
  limit_exceeded,
  /// A length or element count larger than the bytes left could possibly hold.
  length_exceeds_input,
  /// An externalizable class with no codec in the registry: its payload length is unknown.
  unknown_externalizable,
  /// An externalizable payload that does not fit its class codec (bad small-message flags,
  /// an unknown charset).
  bad_external,
  /// A remoting packet whose version is not 0, 1 or 3.
  bad_packet_version,
  /// Bytes left over after a complete bare value.
  trailing_bytes,
};

/// The error category of `amf::errc` (name "amf").
const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// A decode failure: what went wrong and the offset of the token where it did.
/// A default-constructed `decode_error` means success.
struct decode_error {
  std::error_code code;
  std::size_t offset = 0;

  explicit operator bool() const noexcept { return static_cast<bool>(code); }
  /// "unknown type marker at byte 17"
  std::string message() const;
};

/// Thrown by the throwing overloads of the decode functions.
class decode_exception : public std::runtime_error {
 public:
  explicit decode_exception(const decode_error& e) : std::runtime_error(e.message()), error_(e) {}
  const decode_error& error() const noexcept { return error_; }

 private:
  decode_error error_;
};

}  // namespace amf

template <>
struct std::is_error_code_enum<amf::errc> : std::true_type {};
