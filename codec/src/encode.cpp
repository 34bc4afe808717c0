#include "amf/encode.hpp"

#include "charset.hpp"
#include "small_message.hpp"
#include "writer.hpp"

namespace amf {
namespace detail {

namespace {
std::uint64_t load64(const char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
std::uint64_t mix(std::uint64_t h, std::uint64_t w) noexcept {
  h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}
const std::uint64_t text_seed =
    mix(reinterpret_cast<std::uintptr_t>(&load64), 0x9E3779B97F4A7C15ull);
}  // namespace

std::size_t text_hash(std::string_view s) noexcept {
  const char* p = s.data();
  std::size_t n = s.size();
  std::uint64_t h = mix(text_seed, n);
  for (; n > 8; n -= 8, p += 8) h = mix(h, load64(p));
  if (s.size() >= 8) {
    h = mix(h, load64(s.data() + s.size() - 8));  // the last eight, overlapping what came before
  } else {
    std::uint64_t w = 0;
    for (std::size_t i = 0; i < n; ++i) w = (w << 8) | static_cast<unsigned char>(p[i]);
    h = mix(h, w);
  }
  // A word's high bytes reach the low bits (which pick the slot) only through this finish.
  h = (h ^ (h >> 33)) * 0xFF51AFD7ED558CCDull;
  h = (h ^ (h >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return static_cast<std::size_t>(h ^ (h >> 33));
}

std::size_t traits_hash::operator()(const traits* t) const noexcept {
  std::size_t r =
      text_hash(t->alias) ^ (t->dynamic ? 0x51ed27 : 0) ^ (t->externalizable ? 0x2f1 : 0);
  for (auto n : t->sealed) r = (r * 1099511628211ull) ^ text_hash(n);
  return r;
}

// Room for a half of what is written so far: the zeros `resize` writes cost about as much
// again as the bytes written over them, not more.
void writer::grow(std::size_t n) {
  out_.resize(len_ + std::max({n, len_ / 2, std::size_t{256}}));
  slack_ = true;
}

void writer::reset_tables() {
  amf0_refs_.clear();
  objects_.clear();
  strings_.clear();
  string_views_.clear();
  traits_.clear();
  amf0_count_ = object_count_ = string_count_ = traits_count_ = 0;
  last_traits_ = nullptr;
}

void writer::string3(std::string_view s) {
  if (s.empty()) {
    u8(0x01);
    return;
  }
  // Hashing a long string's content costs its length: that is done once per distinct view, so
  // that encoding costs the bytes written, however often a long string is referenced. A short
  // one is hashed as cheaply as its address would be, and goes straight to the content table.
  constexpr std::size_t short_string = 64;
  std::uint32_t i;
  if (s.size() <= short_string) {
    i = strings_.find_or_insert({s, text_hash(s)}, string_count_);
  } else {
    const view_identity where{s.data(), s.size()};
    i = string_views_.find_or_insert(where, string_count_);
    if (i == string_views_.npos) {
      i = strings_.find_or_insert({s, text_hash(s)}, string_count_);
      if (i != strings_.npos) string_views_.assign(where, i);  // the same text seen elsewhere
    }
  }
  if (i != strings_.npos) {
    u29(i << 1);
    return;
  }
  ++string_count_;
  u29((static_cast<std::uint32_t>(s.size()) << 1) | 1);
  raw(s);
}

// Writes a reference and returns true if `n` is already in the AMF3 object table; else
// enters it (its index is taken as it starts, before its children).
bool writer::amf3_reference(node* n) {
  const auto i = objects_.find_or_insert(n, object_count_);
  if (i == objects_.npos) {
    ++object_count_;
    return false;
  }
  u29(i << 1);
  return true;
}

// AMF0 references carry 16 bits: a node past index 65535 is written out again.
bool writer::amf0_reference(node* n) {
  const auto i = amf0_refs_.find_or_insert(n, amf0_count_);
  if (i == amf0_refs_.npos) {
    ++amf0_count_;
    return false;
  }
  if (i > 0xFFFF) {
    ++amf0_count_;  // the reader enters it again, at a new index
    return false;
  }
  u8(0x07);
  u16(i);
  return true;
}

// ---------------------------------------------------------------------------------- AMF0

void writer::amf0_members(const object_node& o) {
  const auto& names = o.cls->sealed;
  for (std::size_t i = 0; i < o.sealed.size() && i < names.size(); ++i) {
    utf8_u16(names[i]);
    amf0(o.sealed[i]);
  }
  for (const auto& m : o.dynamic) {
    utf8_u16(m.name);
    amf0(m.val);
  }
  raw(std::string_view("\0\0\x09", 3));
}

void writer::amf0(const value& v, bool arguments) {
  check_limit();
  if (v.has_flag(value::avmplus)) {
    u8(0x11);
    amf3(v);
    return;
  }
  switch (v.kind()) {
    case type::undefined:
      u8(0x06);
      return;
    case type::null:
      u8(0x05);
      return;
    case type::unsupported:
      u8(0x0D);
      return;
    case type::boolean:
      u8(0x01);
      u8(v.as_bool() ? 1 : 0);
      return;
    case type::integer:
    case type::number:
      number(0x00, v.to_double());
      return;
    case type::string: {
      auto s = v.as_string();
      if (v.has_flag(value::long_string) || s.size() > 0xFFFF) {
        u8(0x0C);
        u32(static_cast<std::uint32_t>(s.size()));
        raw(s);
      } else {
        u8(0x02);
        utf8_u16(s);
      }
      return;
    }
    case type::date: {
      auto* d = v.as_date();
      if (amf0_reference(d)) return;
      u8(0x0B);
      f64(d->millis);
      u16(static_cast<std::uint16_t>(d->timezone));
      return;
    }
    case type::object: {
      auto* o = v.as_object();
      if (amf0_reference(o)) return;
      if (o->cls->alias.empty()) {
        u8(0x03);
      } else {
        u8(0x10);
        utf8_u16(o->cls->alias);
      }
      amf0_members(*o);
      return;
    }
    case type::array: {
      auto* a = v.as_array();
      // Only a strict array is left out of the table as the argument array.
      if ((!arguments || !a->assoc.empty()) && amf0_reference(a)) return;
      if (a->assoc.empty()) {
        u8(0x0A);
        u32(static_cast<std::uint32_t>(a->dense.size()));
        for (const auto& e : a->dense) amf0(e);
        return;
      }
      // A mixed array goes as an ECMA array, as Flash writes it: indices as keys first.
      u8(0x08);
      u32(static_cast<std::uint32_t>(a->dense.size()));
      for (std::size_t i = 0; i < a->dense.size(); ++i) {
        utf8_u16(std::to_string(i));
        amf0(a->dense[i]);
      }
      for (const auto& m : a->assoc) {
        utf8_u16(m.name);
        amf0(m.val);
      }
      raw(std::string_view("\0\0\x09", 3));
      return;
    }
    case type::ecma_array: {
      auto* a = v.as_array();
      if (amf0_reference(a)) return;
      u8(0x08);
      u32(a->ecma_count);
      for (const auto& m : a->assoc) {
        utf8_u16(m.name);
        amf0(m.val);
      }
      raw(std::string_view("\0\0\x09", 3));
      return;
    }
    case type::xml_document: {
      auto t = v.as_xml()->text;
      u8(0x0F);
      u32(static_cast<std::uint32_t>(t.size()));
      raw(t);
      return;
    }
    default:  // no AMF0 form
      u8(0x11);
      amf3(v);
      return;
  }
}

// ---------------------------------------------------------------------------------- AMF3

void writer::amf3_traits(const traits* t) {
  // Objects of one class share one traits pointer: skip hashing the content for a run.
  if (t == last_traits_) {
    u29((last_traits_index_ << 2) | 1);
    return;
  }
  if (auto i = traits_.find_or_insert(t, traits_count_); i != traits_.npos) {
    last_traits_ = t;
    last_traits_index_ = i;
    u29((i << 2) | 1);
    return;
  }
  last_traits_ = t;
  last_traits_index_ = traits_count_++;
  if (t->externalizable) {
    u29(t->dynamic ? 0x0F : 0x07);
  } else {
    u29((static_cast<std::uint32_t>(t->sealed.size()) << 4) | (t->dynamic ? 0x08 : 0) | 0x03);
  }
  string3(t->alias);
  if (!t->externalizable) {
    for (auto n : t->sealed) string3(n);
  }
}

void writer::amf3(const value& v) {
  check_limit();
  switch (v.kind()) {
    case type::undefined:
    case type::unsupported:
      u8(0x00);
      return;
    case type::null:
      u8(0x01);
      return;
    case type::boolean:
      u8(v.as_bool() ? 0x03 : 0x02);
      return;
    case type::integer:
      integer3(v.as_int());
      return;
    case type::number:
      number(0x05, v.as_double());
      return;
    case type::string:
      u8(0x06);
      string3(v.as_string());
      return;
    case type::date: {
      u8(0x08);
      auto* d = v.as_date();
      if (amf3_reference(d)) return;
      u8(0x01);
      f64(d->millis);
      return;
    }
    case type::xml:
    case type::xml_document: {
      u8(v.kind() == type::xml ? 0x0B : 0x07);
      auto* x = v.as_xml();
      if (amf3_reference(x)) return;
      u29((static_cast<std::uint32_t>(x->text.size()) << 1) | 1);
      raw(x->text);
      return;
    }
    case type::byte_array: {
      u8(0x0C);
      auto* b = v.as_bytes();
      if (amf3_reference(b)) return;
      u29((static_cast<std::uint32_t>(b->bytes.size()) << 1) | 1);
      raw({reinterpret_cast<const char*>(b->bytes.data()), b->bytes.size()});
      return;
    }
    case type::array:
    case type::ecma_array: {
      u8(0x09);
      auto* a = v.as_array();
      if (amf3_reference(a)) return;
      u29((static_cast<std::uint32_t>(a->dense.size()) << 1) | 1);
      // A member named "" has no AMF3 encoding: the empty name ends the associative part (and
      // the dynamic members below), and what follows it would be misread. Such members (a
      // handler's map with a "" key, typed JSON) are left out. AMF0 has the marker after an
      // empty name to tell the end from a member, and keeps them.
      for (const auto& m : a->assoc) {
        if (m.name.empty()) continue;
        string3(m.name);
        amf3(m.val);
      }
      u8(0x01);
      dense3(a->dense);
      return;
    }
    case type::object: {
      u8(0x0A);
      auto* o = v.as_object();
      if (amf3_reference(o)) return;
      amf3_traits(o->cls);
      for (std::size_t i = 0; i < o->cls->sealed.size(); ++i) {
        amf3(i < o->sealed.size() ? o->sealed[i] : value::undefined());
      }
      if (o->cls->dynamic) {
        for (const auto& m : o->dynamic) {
          if (m.name.empty()) continue;
          string3(m.name);
          amf3(m.val);
        }
        u8(0x01);
      }
      return;
    }
    case type::vector_int:
    case type::vector_uint:
    case type::vector_double:
    case type::vector_object: {
      auto* vec = v.as_vector();
      u8(0x0D + static_cast<unsigned>(v.kind()) - static_cast<unsigned>(type::vector_int));
      if (amf3_reference(vec)) return;
      u29((static_cast<std::uint32_t>(vec->size()) << 1) | 1);
      u8(vec->fixed ? 1 : 0);
      for (auto x : vec->ints) u32(static_cast<std::uint32_t>(x));
      for (auto x : vec->uints) u32(x);
      for (auto x : vec->doubles) f64(x);
      if (v.kind() == type::vector_object) {
        string3(vec->type_name);
        for (const auto& x : vec->objects) amf3(x);
      }
      return;
    }
    case type::dictionary: {
      u8(0x11);
      auto* d = v.as_dictionary();
      if (amf3_reference(d)) return;
      u29((static_cast<std::uint32_t>(d->entries.size()) << 1) | 1);
      u8(d->weak_keys ? 1 : 0);
      for (const auto& e : d->entries) {
        amf3(e.key);
        amf3(e.val);
      }
      return;
    }
    case type::externalizable: {
      u8(0x0A);
      auto* e = v.as_external();
      if (amf3_reference(e)) return;
      amf3_traits(e->cls);
      amf3_external(*e);
      return;
    }
  }
}

// Runs of integers (arrays of numbers are common) are written in place, with one check for
// room and the limit per run, not a call per element.
void writer::dense3(std::span<const value> items) {
  for (std::size_t i = 0; i < items.size();) {
    if (items[i].kind() != type::integer) {
      amf3(items[i++]);
      continue;
    }
    std::size_t end = i;
    while (end < items.size() && end - i < 4096 && items[end].kind() == type::integer) ++end;
    check_limit();
    char* const start = room(9 * (end - i));
    char* p = start;
    for (; i < end; ++i) p += put_integer3(p, items[i].as_int());
    len_ += static_cast<std::size_t>(p - start);
  }
}

void writer::amf3_external(const external_node& e) {
  switch (e.layout) {
    case external_node::form::single:
      amf3(e.payload);
      return;
    case external_node::form::small_message:
      small_message(e);
      return;
    case external_node::form::raw:
      raw({reinterpret_cast<const char*>(e.raw.data()), e.raw.size()});
      return;
    case external_node::form::ops:
      for (const auto& o : e.ops) op(o);
      return;
  }
}

void writer::small_message(const external_node& e) {
  const char third = small_message_kind(e.cls->alias);
  const object_node* fields = e.payload.as_object();
  auto field = [&](std::string_view name) -> const value* {
    return fields ? fields->find(name) : nullptr;
  };
  const bool computed = e.flags[0].empty() && e.flags[1].empty() && e.flags[2].empty();
  const int levels = third == 0 ? 2 : 3;
  for (int level = 0; level < levels; ++level) {
    const auto names = small_message_fields(level, third);
    std::vector<std::uint8_t> flags;
    if (computed) {
      // A bit for every non-null field; trailing zero bytes are left out, but every level
      // has at least one byte.
      for (std::size_t i = 0; i < names.size(); ++i) {
        std::uint8_t b = 0;
        for (std::size_t bit = 0; bit < names[i].size(); ++bit) {
          const value* f = field(names[i][bit]);
          if (f && !f->is_null() && !f->is_undefined()) b |= static_cast<std::uint8_t>(1u << bit);
        }
        flags.push_back(b);
      }
      while (flags.size() > 1 && flags.back() == 0) flags.pop_back();
      if (flags.empty()) flags.push_back(0);
      for (std::size_t i = 0; i + 1 < flags.size(); ++i) flags[i] |= 0x80;
    } else {
      // Bits whose values were dropped on reading (unassigned ones) are cleared.
      flags.assign(e.flags[level].begin(), e.flags[level].end());
      for (std::size_t i = 0; i < flags.size(); ++i) {
        const std::size_t known = i < names.size() ? names[i].size() : 0;
        flags[i] &= static_cast<std::uint8_t>(0x80 | ((1u << known) - 1));
      }
    }
    for (auto b : flags) u8(b);
    for (std::size_t i = 0; i < flags.size() && i < names.size(); ++i) {
      for (std::size_t bit = 0; bit < names[i].size(); ++bit) {
        if ((flags[i] & (1u << bit)) == 0) continue;
        const value* f = field(names[i][bit]);
        amf3(f ? *f : value::null());
      }
    }
  }
}

namespace {
// The low 32 bits of a numeric value, as IDataOutput truncates it.
std::uint32_t as_u32(const value& v) {
  const double d = v.to_double();
  if (!(d > -9.2e18 && d < 9.2e18)) return 0;
  return static_cast<std::uint32_t>(static_cast<std::int64_t>(d));
}
}  // namespace

void writer::op(const external_op& o) {
  using k = external_op;
  switch (o.kind) {
    case k::boolean:
      u8(o.val.as_bool() ? 1 : 0);
      return;
    case k::byte:
    case k::unsigned_byte:
      u8(as_u32(o.val) & 0xFF);
      return;
    case k::short_:
    case k::unsigned_short:
      u16(as_u32(o.val) & 0xFFFF);
      return;
    case k::int_:
    case k::unsigned_int:
      u32(as_u32(o.val));
      return;
    case k::float_:
      u32(std::bit_cast<std::uint32_t>(static_cast<float>(o.val.to_double())));
      return;
    case k::double_:
      f64(o.val.to_double());
      return;
    case k::utf:
      utf8_u16(o.val.as_string());
      return;
    case k::utf_bytes:
      raw(o.val.as_string());
      return;
    case k::multi_byte:
      raw(charset::from_utf8(o.charset, o.val.as_string()));
      return;
    case k::object:
      amf3(o.val);
      return;
  }
}

}  // namespace detail

encoder::encoder(std::string& out) : w_(std::make_unique<detail::writer>(out)) {}
encoder::~encoder() = default;
namespace {
// The caller may read or change `out` between writes: each write takes it as it is and leaves
// it cut back to what was written, also when the write throws.
template <class Write>
void in_turn(detail::writer& w, Write&& write) {
  struct cut_back {
    detail::writer& w;
    ~cut_back() { w.sync(); }
  };
  w.resume();
  const cut_back guard{w};
  write();
}
}  // namespace

void encoder::write_amf0(const value& v) {
  in_turn(*w_, [&] { w_->amf0(v); });
}
void encoder::write_amf0_arguments(const value& v) {
  in_turn(*w_, [&] { w_->amf0(v, true); });
}
void encoder::write_amf3(const value& v) {
  in_turn(*w_, [&] { w_->amf3(v); });
}
void encoder::reset_tables() {
  w_->reset_tables();
}

void encode_amf0(const value& v, std::string& out) {
  detail::writer(out).amf0(v);
}
void encode_amf3(const value& v, std::string& out) {
  detail::writer(out).amf3(v);
}
std::size_t write_u29(char* p, std::uint32_t v) noexcept {
  return detail::writer::put_u29(p, v);
}

}  // namespace amf
