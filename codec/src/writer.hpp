// Internal: the AMF0/AMF3 writer behind `encoder` and `encode_packet`.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amf/encode.hpp"
#include "node_table.hpp"

namespace amf::detail {

/// A string by where it lies, not what it says: the decoder hands out one view for every
/// reference to a string, so a string referenced a million times is hashed once.
struct view_identity {
  const char* data = nullptr;
  std::size_t size = 0;
  bool operator==(const view_identity&) const = default;
};
struct identity_hash {
  std::size_t operator()(const view_identity& v) const noexcept {
    return pointer_hash{}(v.data) ^ (v.size * 0xC2B2AE3D27D4EB4Full);
  }
};

/// Text with its hash, computed once: the table compares hashes before bytes.
struct hashed_text {
  std::string_view text;
  std::size_t hash = 0;
  bool operator==(const hashed_text& o) const noexcept {
    return hash == o.hash && text.size() == o.text.size() &&
           std::memcmp(text.data(), o.text.data(), text.size()) == 0;
  }
};
/// A fast hash of short text, eight bytes at a time, seeded per process (by where the code is
/// loaded) so that colliding strings cannot be prepared in advance.
std::size_t text_hash(std::string_view s) noexcept;
struct hashed_text_hash {
  std::size_t operator()(const hashed_text& t) const noexcept { return t.hash; }
};

struct traits_hash {
  std::size_t operator()(const traits* t) const noexcept;
};
struct traits_eq {
  bool operator()(const traits* a, const traits* b) const noexcept {
    return a == b || (a && b && a->same_as(*b));
  }
};

/// Thrown by a writer whose output would pass its limit.
struct limit_reached {};

class writer {
 public:
  /// Appends to `out` from its current end. Bytes are written into room grown ahead at the end
  /// of `out` (zero-filled by `resize`), past its logical length `size()`: `out` holds that
  /// room until `sync()` or the writer's end cuts it back. Callers that look at `out` between
  /// writes call `sync()` first (and `resume()` after changing it themselves).
  explicit writer(std::string& out) : out_(out), len_(out.size()) {}
  ~writer() {
    if (slack_) sync();  // not otherwise: `out` may hold what its owner added since
  }
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  /// From now on, throws `limit_reached` rather than let the output pass `max_bytes` (checked
  /// at each value and each run of bytes, so it may pass it by a few bytes).
  void limit(std::size_t max_bytes) { limit_ = max_bytes; }

  void amf0(const value& v, bool arguments = false);
  void amf3(const value& v);
  void reset_tables();

  void u8(unsigned b) {
    *room(1) = static_cast<char>(b);
    ++len_;
  }
  void u16(unsigned v) {
    char* p = room(2);
    p[0] = static_cast<char>(v >> 8);
    p[1] = static_cast<char>(v);
    len_ += 2;
  }
  void u32(std::uint32_t v) {
    put_u32(room(4), v);
    len_ += 4;
  }
  static void put_u32(char* p, std::uint32_t v) {
    v = std::endian::native == std::endian::little ? __builtin_bswap32(v) : v;
    std::memcpy(p, &v, 4);
  }
  void f64(double d) {
    put_f64(room(8), d);
    len_ += 8;
  }
  /// A double with its marker: one check for room.
  void number(char marker, double d) {
    char* p = room(9);
    p[0] = marker;
    put_f64(p + 1, d);
    len_ += 9;
  }
  static void put_f64(char* p, double d) {
    auto u = std::bit_cast<std::uint64_t>(d);
    u = std::endian::native == std::endian::little ? __builtin_bswap64(u) : u;
    std::memcpy(p, &u, 8);
  }
  void raw(std::string_view s) {
    check_limit(s.size());
    if (s.size() >= long_run) {  // appended as it is: not written twice, zeros then bytes
      sync();
      out_.append(s);
    } else {
      copy(room(s.size()), s.data(), s.size());
    }
    len_ += s.size();
  }
  void check_limit() const {
    if (len_ > limit_) throw limit_reached{};
  }
  /// Throws if `adding` more bytes would pass the limit.
  void check_limit(std::size_t adding) const {
    if (adding > limit_ - std::min(limit_, len_)) throw limit_reached{};
  }
  /// AMF0 UTF-8 with a u16 length (cut at 65535 bytes: AMF0 cannot say more).
  void utf8_u16(std::string_view s) {
    if (s.size() > 0xFFFF) s = s.substr(0, 0xFFFF);
    check_limit(s.size());
    char* p = room(2 + s.size());
    p[0] = static_cast<char>(s.size() >> 8);
    p[1] = static_cast<char>(s.size());
    copy(p + 2, s.data(), s.size());
    len_ += 2 + s.size();
  }
  /// Copies `n` bytes. Most strings written are short (member names, class names, values):
  /// up to 16 bytes are two overlapping loads and stores instead of a call to memcpy.
  static void copy(char* to, const char* from, std::size_t n) {
    if (n >= 8 && n <= 16) {
      copy_fixed<8>(to, from);
      copy_fixed<8>(to + n - 8, from + n - 8);
    } else if (n >= 4 && n < 8) {
      copy_fixed<4>(to, from);
      copy_fixed<4>(to + n - 4, from + n - 4);
    } else if (n > 16) {
      std::memcpy(to, from, n);
    } else if (n > 0) {
      to[0] = from[0];
      to[n / 2] = from[n / 2];
      to[n - 1] = from[n - 1];
    }
  }
  template <std::size_t N>
  static void copy_fixed(char* to, const char* from) {
    char b[N];
    std::memcpy(b, from, N);
    std::memcpy(to, b, N);
  }
  /// The bytes written so far (and what `out` held before).
  std::size_t size() const noexcept { return len_; }
  /// Writes `v` big-endian over the four bytes at `at`.
  void patch_u32(std::size_t at, std::uint32_t v) { put_u32(out_.data() + at, v); }
  /// Drops what was written past `at`.
  void truncate(std::size_t at) { len_ = std::min(len_, at); }
  /// Cuts `out` back to what was written.
  void sync() {
    out_.resize(len_);
    slack_ = false;
  }
  /// Takes `out` as it is now (after its owner changed it between writes).
  void resume() { len_ = out_.size(); }

  /// Writes the low 29 bits of `v` as a U29 at `p` (room for four bytes); returns its length.
  static std::size_t put_u29(char* p, std::uint32_t v) {
    v &= 0x1FFFFFFF;
    if (v < 0x80) {
      p[0] = static_cast<char>(v);
      return 1;
    }
    if (v < 0x4000) {
      p[0] = static_cast<char>((v >> 7) | 0x80);
      p[1] = static_cast<char>(v & 0x7F);
      return 2;
    }
    if (v < 0x200000) {
      p[0] = static_cast<char>((v >> 14) | 0x80);
      p[1] = static_cast<char>(((v >> 7) & 0x7F) | 0x80);
      p[2] = static_cast<char>(v & 0x7F);
      return 3;
    }
    p[0] = static_cast<char>((v >> 22) | 0x80);
    p[1] = static_cast<char>(((v >> 15) & 0x7F) | 0x80);
    p[2] = static_cast<char>(((v >> 8) & 0x7F) | 0x80);
    p[3] = static_cast<char>(v & 0xFF);
    return 4;
  }

 private:
  char* room(std::size_t n) {
    if (out_.size() - len_ < n) grow(n);
    return out_.data() + len_;
  }
  void grow(std::size_t n);  // out of line: the writes that call `room` stay small
  static constexpr std::size_t long_run = 4096;

  void u29(std::uint32_t v) { len_ += put_u29(room(4), v); }
  void integer3(std::int32_t i) { len_ += put_integer3(room(9), i); }
  /// An AMF3 integer with its marker at `p` (room for nine bytes), past 29 bits a double;
  /// returns its length.
  static std::size_t put_integer3(char* p, std::int32_t i) {
    if (i >= -(1 << 28) && i < (1 << 28)) {
      p[0] = 0x04;
      return 1 + put_u29(p + 1, static_cast<std::uint32_t>(i));
    }
    p[0] = 0x05;
    put_f64(p + 1, i);
    return 9;
  }
  void string3(std::string_view s);
  bool amf3_reference(node* n);
  bool amf0_reference(node* n);
  void amf0_members(const object_node& o);
  void amf3_traits(const traits* t);
  void dense3(std::span<const value> items);
  void amf3_external(const external_node& e);
  void small_message(const external_node& e);
  void op(const external_op& op);

  std::string& out_;
  std::size_t len_;
  bool slack_ = false;  ///< `out` holds room past `len_`
  std::size_t limit_ = static_cast<std::size_t>(-1);
  node_table amf0_refs_, objects_;
  /// 64 slots inside: a poll's reply of a few messages, with their headers, stays within them.
  index_map<hashed_text, hashed_text_hash, std::equal_to<hashed_text>, 64> strings_;
  index_map<view_identity, identity_hash> string_views_;  ///< checked before `strings_`
  index_map<const traits*, traits_hash, traits_eq> traits_;
  std::uint32_t amf0_count_ = 0, object_count_ = 0, string_count_ = 0, traits_count_ = 0;
  const traits* last_traits_ = nullptr;
  std::uint32_t last_traits_index_ = 0;
};

}  // namespace amf::detail
