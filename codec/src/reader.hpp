// Internal: the AMF0/AMF3 reader behind `decoder`, `decode_packet` and `external_reader`.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <string_view>
#include <vector>

#include "amf/decode.hpp"

namespace amf::detail {

class reader {
 public:
  reader(std::span<const std::byte> in, document& doc, const decode_options& opt);

  bool amf0(value& out, bool arguments = false);
  bool amf3(value& out);
  /// `amf3`, with the commonest values (integers, doubles, strings met before, dates) read in
  /// place when their bytes are at hand: members of objects and arrays are mostly these.
  bool amf3_member(value& out) {
    if (remaining() >= 9) {
      switch (std::to_integer<unsigned>(*p_)) {
        case 0x04:
          if (!element()) return false;
          out = integer29(u29_unchecked(++p_));
          return true;
        case 0x05: {
          if (!element()) return false;
          ++p_;
          double d;
          if (!f64(d)) return false;  // it cannot fail: its eight bytes are at hand
          out = value::number(d);
          return true;
        }
        case 0x06: {  // a reference to a string
          const std::byte* p = p_ + 1;
          const std::uint32_t h = u29_unchecked(p);
          if ((h & 1) != 0 || (h >> 1) >= strings_.size()) break;
          if (!element()) return false;
          p_ = p;
          out = value::string(strings_[h >> 1]);
          return true;
        }
        case 0x08:  // a date in full (not a reference)
          if (p_[1] != std::byte{0x01}) break;
          if (!element()) return false;
          p_ += 2;
          return date3(out);
        default:
          break;
      }
    }
    return amf3(out);
  }
  void reset_tables();

  // Raw big-endian fields.
  bool u8(std::uint8_t& v) {
    if (p_ == end_) return fail(errc::truncated);
    v = static_cast<std::uint8_t>(*p_++);
    return true;
  }
  bool u16(std::uint16_t& v) {
    if (end_ - p_ < 2) return fail(errc::truncated);
    v = static_cast<std::uint16_t>((std::to_integer<unsigned>(p_[0]) << 8) |
                                   std::to_integer<unsigned>(p_[1]));
    p_ += 2;
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (end_ - p_ < 4) return fail(errc::truncated);
    v = load32(p_);
    p_ += 4;
    return true;
  }
  bool f64(double& d) {
    if (end_ - p_ < 8) return fail(errc::truncated);
    std::uint64_t u = (std::uint64_t{load32(p_)} << 32) | load32(p_ + 4);
    d = std::bit_cast<double>(u);
    p_ += 8;
    return true;
  }
  /// `n` bytes as a view (or a copy, per the options).
  bool take(std::size_t n, std::span<const std::byte>& out);
  bool take_text(std::size_t n, std::string_view& out);
  /// AMF0 UTF-8 string with a u16 length.
  bool utf8_u16(std::string_view& s) {
    std::uint16_t n;
    return u16(n) && take_text(n, s);
  }

  bool fail(errc e) { return fail(e, p_); }
  bool fail_at(errc e, std::size_t offset) { return fail(e, begin_ + offset); }
  bool fail(errc e, const std::byte* at) {
    if (!err_) err_ = {make_error_code(e), static_cast<std::size_t>(at - begin_)};
    return false;
  }

  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }
  std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }
  const decode_error& error() const noexcept { return err_; }
  void clear_error() { err_ = {}; }
  document& doc() noexcept { return doc_; }

  // The reference tables live in the document's arena: a decode allocates nothing of its own.
  std::pmr::vector<node*> amf0_objects;
  std::pmr::vector<node*> amf3_objects;

 private:
  static std::uint32_t load32(const std::byte* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return std::endian::native == std::endian::little ? __builtin_bswap32(v) : v;
  }
  bool u29(std::uint32_t& v);
  /// An AMF3 integer: the 29-bit two's complement sign-extended.
  static value integer29(std::uint32_t u) {
    return value::integer(static_cast<std::int32_t>(u << 3) >> 3);
  }
  /// A U29 at `p`, with at least four bytes left; `p` moves past it.
  static std::uint32_t u29_unchecked(const std::byte*& p) {
    std::uint32_t r = 0;
    for (int i = 0; i < 3; ++i) {
      const auto b = std::to_integer<std::uint32_t>(*p++);
      if (b < 0x80) return (r << 7) | b;
      r = (r << 7) | (b & 0x7F);
    }
    return (r << 8) | std::to_integer<std::uint32_t>(*p++);
  }
  value* integers(value* v, value* end);
  bool string3(std::string_view& s);
  bool date3(value& out);
  bool count(std::uint32_t n, std::size_t min_bytes_each);
  bool add_object(std::pmr::vector<node*>& table, node* n) {
    if (table.size() >= opt_.max_references) return fail(errc::limit_exceeded);
    table.push_back(n);
    return true;
  }
  bool element();
  template <class Node>
  bool reference(std::uint32_t index, type expected, const std::byte* tok, value& out);

  bool amf0_members(std::pmr::vector<member>& out);
  bool amf3_members(std::pmr::vector<member>& out);
  bool amf3_object(const std::byte* tok, value& out);
  bool amf3_array(const std::byte* tok, value& out);
  bool amf3_dense(std::pmr::vector<value>& dense, std::uint32_t n);
  bool amf3_vector(type kind, const std::byte* tok, value& out);
  bool amf3_dictionary(const std::byte* tok, value& out);
  bool amf3_external(const traits* t, const std::byte* tok, value& out);

  const std::byte* begin_;
  const std::byte* p_;
  const std::byte* end_;
  document& doc_;
  decode_options opt_;
  const class_registry* classes_;
  decode_error err_;
  std::size_t depth_ = 0;
  std::size_t elements_ = 0;
  std::pmr::vector<std::string_view> strings_;
  std::pmr::vector<const traits*> traits_;
  std::pmr::vector<member> scratch_;    // dynamic members under construction, used as a stack
  const traits* last_typed_ = nullptr;  // AMF0 typed objects of one class share traits

  friend class depth_guard;
};

}  // namespace amf::detail
