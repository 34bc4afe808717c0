// Encoding AMF0 and AMF3 values.
//
// The encoder appends to a caller-owned string. Reference tables are keyed by node pointer
// (objects, arrays, dates, ...), by content for strings and traits; never by value equality.
// AMF3 integers outside the 29-bit range go as doubles; AMF0 has no integer and writes a
// double. AMF0 values with no AMF0 form (byte arrays, vectors, dictionaries, E4X XML,
// externalizable objects) go behind the 0x11 switch, as do values flagged `value::avmplus`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "amf/value.hpp"

namespace amf {

namespace detail {
class writer;
}

/// Writes consecutive values, keeping reference tables between calls until `reset_tables`.
class encoder {
 public:
  explicit encoder(std::string& out);
  ~encoder();
  encoder(const encoder&) = delete;
  encoder& operator=(const encoder&) = delete;

  void write_amf0(const value& v);
  /// An AMF0 value whose top-level strict array is not entered in the reference table (the
  /// argument array of a request body).
  void write_amf0_arguments(const value& v);
  void write_amf3(const value& v);
  void reset_tables();

 private:
  std::unique_ptr<detail::writer> w_;
};

void encode_amf0(const value& v, std::string& out);
void encode_amf3(const value& v, std::string& out);

/// Writes the low 29 bits of `v` as an AMF3 U29 at `p` (room for four bytes): its length. For
/// bytes spliced into an encoding, such as the header of an inline string, (size << 1 | 1).
std::size_t write_u29(char* p, std::uint32_t v) noexcept;

}  // namespace amf
