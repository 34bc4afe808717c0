// Internal: the AMF0/AMF3 writer behind `encoder` and `encode_packet`.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "amf/encode.hpp"

namespace amf::detail {

/// Open-addressing map from a key to a table index; keys are never removed.
template <class Key, class Hash, class Eq = std::equal_to<Key>>
class index_map {
 public:
  static constexpr std::uint32_t npos = 0xFFFFFFFF;

  /// The index of `k` if present; else inserts `k` with `index` and returns npos.
  std::uint32_t find_or_insert(const Key& k, std::uint32_t index) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = Hash{}(k)&mask_;
    for (; slots_[i].index != npos; i = (i + 1) & mask_) {
      if (Eq{}(slots_[i].key, k)) return slots_[i].index;
    }
    slots_[i] = {k, index};
    ++size_;
    return npos;
  }
  /// Gives `k`, which is present, the index `index`.
  void assign(const Key& k, std::uint32_t index) {
    std::size_t i = Hash{}(k)&mask_;
    while (!Eq{}(slots_[i].key, k)) i = (i + 1) & mask_;
    slots_[i].index = index;
  }
  void clear() {
    slots_.clear();
    size_ = 0;
    mask_ = 0;
  }

 private:
  struct slot {
    Key key{};
    std::uint32_t index = npos;
  };
  void place(const Key& k, std::uint32_t index) {
    std::size_t i = Hash{}(k)&mask_;
    while (slots_[i].index != npos) i = (i + 1) & mask_;
    slots_[i] = {k, index};
  }
  void grow() {
    std::vector<slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, slot{});
    mask_ = slots_.size() - 1;
    for (const auto& s : old) {
      if (s.index != npos) place(s.key, s.index);
    }
  }
  std::vector<slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
};

struct pointer_hash {
  std::size_t operator()(const void* p) const noexcept {
    return static_cast<std::size_t>(
        (reinterpret_cast<std::uintptr_t>(p) >> 3) * 0x9E3779B97F4A7C15ull >> 16);
  }
};

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
  explicit writer(std::string& out) : out_(out) {}

  /// From now on, throws `limit_reached` rather than let the output pass `max_bytes` (checked
  /// at each value and each run of bytes, so it may pass it by a few bytes).
  void limit(std::size_t max_bytes) { limit_ = max_bytes; }

  void amf0(const value& v, bool arguments = false);
  void amf3(const value& v);
  void reset_tables();

  void u8(unsigned b) { out_.push_back(static_cast<char>(b)); }
  void u16(unsigned v) {
    char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
    out_.append(b, 2);
  }
  void u32(std::uint32_t v) {
    v = std::endian::native == std::endian::little ? __builtin_bswap32(v) : v;
    char b[4];
    std::memcpy(b, &v, 4);
    out_.append(b, 4);
  }
  void f64(double d) {
    auto u = std::bit_cast<std::uint64_t>(d);
    u32(static_cast<std::uint32_t>(u >> 32));
    u32(static_cast<std::uint32_t>(u));
  }
  void raw(std::string_view s) {
    if (s.size() > limit_ - std::min(limit_, out_.size())) throw limit_reached{};
    out_.append(s);
  }
  void check_limit() const {
    if (out_.size() > limit_) throw limit_reached{};
  }
  /// AMF0 UTF-8 with a u16 length (cut at 65535 bytes: AMF0 cannot say more).
  void utf8_u16(std::string_view s) {
    if (s.size() > 0xFFFF) s = s.substr(0, 0xFFFF);
    u16(static_cast<unsigned>(s.size()));
    raw(s);
  }
  std::string& out() { return out_; }

 private:
  void u29(std::uint32_t v);
  void string3(std::string_view s);
  bool amf3_reference(node* n);
  bool amf0_reference(node* n);
  void amf0_members(const object_node& o);
  void amf3_traits(const traits* t);
  void amf3_external(const external_node& e);
  void small_message(const external_node& e);
  void op(const external_op& op);

  std::string& out_;
  std::size_t limit_ = static_cast<std::size_t>(-1);
  index_map<const void*, pointer_hash> amf0_refs_, objects_;
  index_map<std::string_view, std::hash<std::string_view>> strings_;
  index_map<view_identity, identity_hash> string_views_;  ///< checked before `strings_`
  index_map<const traits*, traits_hash, traits_eq> traits_;
  std::uint32_t amf0_count_ = 0, object_count_ = 0, string_count_ = 0, traits_count_ = 0;
  const traits* last_traits_ = nullptr;
  std::uint32_t last_traits_index_ = 0;
};

}  // namespace amf::detail
