#include "amf/decode.hpp"

#include "reader.hpp"

namespace amf {
namespace detail {

class depth_guard {
 public:
  explicit depth_guard(reader& r) : r_(r) { ++r_.depth_; }
  ~depth_guard() { --r_.depth_; }
  depth_guard(const depth_guard&) = delete;
  depth_guard& operator=(const depth_guard&) = delete;
  bool ok(const std::byte* tok) {
    return r_.depth_ <= r_.opt_.max_depth || r_.fail(errc::depth_exceeded, tok);
  }

 private:
  reader& r_;
};

reader::reader(std::span<const std::byte> in, document& doc, const decode_options& opt)
    : amf0_objects(doc.resource()),
      amf3_objects(doc.resource()),
      begin_(in.data()),
      p_(in.data()),
      end_(in.data() + in.size()),
      doc_(doc),
      opt_(opt),
      classes_(opt.classes ? opt.classes : &class_registry::builtin()),
      strings_(doc.resource()),
      traits_(doc.resource()),
      scratch_(doc.resource()) {}

void reader::reset_tables() {
  amf0_objects.clear();
  amf3_objects.clear();
  strings_.clear();
  traits_.clear();
}

bool reader::take(std::size_t n, std::span<const std::byte>& out) {
  if (n > remaining()) return fail(errc::length_exceeds_input);
  if (n > opt_.max_string_bytes) return fail(errc::limit_exceeded);
  out = {p_, n};
  if (opt_.copy_strings) out = doc_.copy(out);
  p_ += n;
  return true;
}

bool reader::take_text(std::size_t n, std::string_view& out) {
  std::span<const std::byte> b;
  if (!take(n, b)) return false;
  out = {reinterpret_cast<const char*>(b.data()), b.size()};
  return true;
}

bool reader::u29(std::uint32_t& v) {
  std::uint32_t r = 0;
  for (int i = 0; i < 3; ++i) {
    if (p_ == end_) return fail(errc::truncated);
    auto b = std::to_integer<std::uint32_t>(*p_++);
    if (b < 0x80) {
      v = (r << 7) | b;
      return true;
    }
    r = (r << 7) | (b & 0x7F);
  }
  if (p_ == end_) return fail(errc::truncated);
  v = (r << 8) | std::to_integer<std::uint32_t>(*p_++);
  return true;
}

bool reader::string3(std::string_view& s) {
  const std::byte* tok = p_;
  std::uint32_t h;
  if (!u29(h)) return false;
  if ((h & 1) == 0) {
    if ((h >> 1) >= strings_.size()) return fail(errc::bad_reference, tok);
    s = strings_[h >> 1];
    return true;
  }
  if (!take_text(h >> 1, s)) return false;
  if (!s.empty()) {
    if (strings_.size() >= opt_.max_references) return fail(errc::limit_exceeded, tok);
    strings_.push_back(s);
  }
  return true;
}

// A count of items of at least `min_bytes_each` bytes must fit in what is left.
bool reader::count(std::uint32_t n, std::size_t min_bytes_each) {
  if (n > remaining() / min_bytes_each) return fail(errc::length_exceeds_input);
  return true;
}

bool reader::element() {
  return ++elements_ <= opt_.max_elements || fail(errc::limit_exceeded);
}

template <class Node>
bool reader::reference(std::uint32_t index, type expected, const std::byte* tok, value& out) {
  if (index >= amf3_objects.size()) return fail(errc::bad_reference, tok);
  node* n = amf3_objects[index];
  if (n->kind != expected) return fail(errc::bad_reference, tok);
  n->referenced = true;
  out = value::of(n);
  return true;
}

// ---------------------------------------------------------------------------------- AMF0

bool reader::amf0_members(std::pmr::vector<member>& out) {
  const std::size_t base = scratch_.size();
  for (;;) {
    std::string_view name;
    if (!utf8_u16(name)) return false;
    if (name.empty()) {
      if (p_ == end_) return fail(errc::truncated);
      if (*p_ == std::byte{0x09}) {
        ++p_;
        break;
      }
    }
    value v;
    if (!amf0(v)) return false;
    scratch_.push_back({name, v});
  }
  out.assign(scratch_.begin() + static_cast<std::ptrdiff_t>(base), scratch_.end());
  scratch_.resize(base);
  return true;
}

bool reader::amf0(value& out, bool arguments) {
  if (p_ == end_) return fail(errc::truncated);
  if (!element()) return false;
  const std::byte* tok = p_;
  const auto marker = std::to_integer<std::uint8_t>(*p_++);
  switch (marker) {
    case 0x00: {
      double d;
      if (!f64(d)) return false;
      out = value::number(d);
      return true;
    }
    case 0x01: {
      std::uint8_t b;
      if (!u8(b)) return false;
      out = value::boolean(b != 0);
      return true;
    }
    case 0x02: {
      std::string_view s;
      if (!utf8_u16(s)) return false;
      out = value::string(s);
      return true;
    }
    case 0x0C: {
      std::uint32_t n;
      std::string_view s;
      if (!u32(n) || !take_text(n, s)) return false;
      out = value::string(s, value::long_string);
      return true;
    }
    case 0x03:
    case 0x10: {
      depth_guard g(*this);
      if (!g.ok(tok)) return false;
      const traits* t = doc_.anonymous_traits();
      if (marker == 0x10) {
        std::string_view alias;
        if (!utf8_u16(alias)) return false;
        if (!last_typed_ || last_typed_->alias != alias) {
          traits* nt = doc_.create<traits>(doc_.resource());
          nt->alias = alias;
          nt->dynamic = true;
          last_typed_ = nt;
        }
        t = last_typed_;
      }
      auto* o = doc_.create<object_node>(t, doc_.resource());
      if (!add_object(amf0_objects, o) || !amf0_members(o->dynamic)) return false;
      out = value::of(o);
      return true;
    }
    case 0x05:
      out = value::null();
      return true;
    case 0x06:
      out = value::undefined();
      return true;
    case 0x0D:
      out = value::unsupported();
      return true;
    case 0x07: {
      std::uint16_t i;
      if (!u16(i)) return false;
      if (i >= amf0_objects.size()) return fail(errc::bad_reference, tok);
      amf0_objects[i]->referenced = true;
      out = value::of(amf0_objects[i]);
      return true;
    }
    case 0x08: {
      depth_guard g(*this);
      if (!g.ok(tok)) return false;
      auto* a = doc_.create<array_node>(type::ecma_array, doc_.resource());
      if (!u32(a->ecma_count) || !add_object(amf0_objects, a) || !amf0_members(a->assoc)) {
        return false;
      }
      out = value::of(a);
      return true;
    }
    case 0x0A: {
      depth_guard g(*this);
      std::uint32_t n;
      if (!g.ok(tok) || !u32(n) || !count(n, 1)) return false;
      auto* a = doc_.create<array_node>(type::array, doc_.resource());
      if (!arguments && !add_object(amf0_objects, a)) return false;
      a->dense.resize(n);
      for (auto& v : a->dense) {
        if (!amf0(v)) return false;
      }
      out = value::of(a);
      return true;
    }
    case 0x0B: {
      double ms;
      std::uint16_t tz;
      if (!f64(ms) || !u16(tz)) return false;
      auto* d = doc_.create<date_node>(ms, static_cast<std::int16_t>(tz));
      if (!add_object(amf0_objects, d)) return false;
      out = value::of(d);
      return true;
    }
    case 0x0F: {
      std::uint32_t n;
      std::string_view s;
      if (!u32(n) || !take_text(n, s)) return false;
      out = value::of(doc_.create<xml_node>(type::xml_document, s));
      return true;
    }
    case 0x11:
      if (!amf3(out)) return false;
      out = out.with_flags(out.flags() | value::avmplus);
      return true;
    default:
      return fail(errc::unknown_marker, tok);
  }
}

// ---------------------------------------------------------------------------------- AMF3

bool reader::amf3(value& out) {
  if (p_ == end_) return fail(errc::truncated);
  if (!element()) return false;
  const std::byte* tok = p_;
  const auto marker = std::to_integer<std::uint8_t>(*p_++);
  switch (marker) {
    case 0x00:
      out = value::undefined();
      return true;
    case 0x01:
      out = value::null();
      return true;
    case 0x02:
    case 0x03:
      out = value::boolean(marker == 0x03);
      return true;
    case 0x04: {
      std::uint32_t u;
      if (!u29(u)) return false;
      out = integer29(u);
      return true;
    }
    case 0x05: {
      double d;
      if (!f64(d)) return false;
      out = value::number(d);
      return true;
    }
    case 0x06: {
      std::string_view s;
      if (!string3(s)) return false;
      out = value::string(s);
      return true;
    }
    case 0x07:
    case 0x0B: {
      const type k = marker == 0x07 ? type::xml_document : type::xml;
      std::uint32_t h;
      if (!u29(h)) return false;
      if ((h & 1) == 0) return reference<xml_node>(h >> 1, k, tok, out);
      std::string_view s;
      if (!take_text(h >> 1, s)) return false;
      auto* x = doc_.create<xml_node>(k, s);
      if (!add_object(amf3_objects, x)) return false;
      out = value::of(x);
      return true;
    }
    case 0x08: {
      std::uint32_t h;
      if (!u29(h)) return false;
      if ((h & 1) == 0) return reference<date_node>(h >> 1, type::date, tok, out);
      return date3(out);
    }
    case 0x09:
      return amf3_array(tok, out);
    case 0x0A:
      return amf3_object(tok, out);
    case 0x0C: {
      std::uint32_t h;
      if (!u29(h)) return false;
      if ((h & 1) == 0) return reference<bytes_node>(h >> 1, type::byte_array, tok, out);
      std::span<const std::byte> b;
      if (!take(h >> 1, b)) return false;
      auto* n = doc_.create<bytes_node>(b);
      if (!add_object(amf3_objects, n)) return false;
      out = value::of(n);
      return true;
    }
    case 0x0D:
      return amf3_vector(type::vector_int, tok, out);
    case 0x0E:
      return amf3_vector(type::vector_uint, tok, out);
    case 0x0F:
      return amf3_vector(type::vector_double, tok, out);
    case 0x10:
      return amf3_vector(type::vector_object, tok, out);
    case 0x11:
      return amf3_dictionary(tok, out);
    default:
      return fail(errc::unknown_marker, tok);
  }
}

// A date's milliseconds, after its marker and its header (not a reference).
bool reader::date3(value& out) {
  double ms;
  if (!f64(ms)) return false;
  auto* d = doc_.create<date_node>(ms, std::int16_t{0});
  if (!add_object(amf3_objects, d)) return false;
  out = value::of(d);
  return true;
}

// Name/value pairs up to the empty name: an array's associative part, an object's dynamic
// members. Collected on the scratch stack (nested values push above and pop), then copied.
bool reader::amf3_members(std::pmr::vector<member>& out) {
  const std::size_t base = scratch_.size();
  for (;;) {
    std::string_view name;
    if (!string3(name)) return false;
    if (name.empty()) break;
    value v;
    if (!amf3_member(v)) return false;
    scratch_.push_back({name, v});
  }
  out.assign(scratch_.begin() + static_cast<std::ptrdiff_t>(base), scratch_.end());
  scratch_.resize(base);
  return true;
}

bool reader::amf3_array(const std::byte* tok, value& out) {
  std::uint32_t h;
  if (!u29(h)) return false;
  if ((h & 1) == 0) return reference<array_node>(h >> 1, type::array, tok, out);
  depth_guard g(*this);
  if (!g.ok(tok) || !count(h >> 1, 1)) return false;
  auto* a = doc_.create<array_node>(type::array, doc_.resource());
  if (!add_object(amf3_objects, a)) return false;
  if (p_ != end_ && *p_ == std::byte{0x01}) {
    ++p_;  // no associative part, as in most arrays
  } else if (!amf3_members(a->assoc)) {
    return false;
  }
  // The associative part may have used up the bytes that the count was checked against.
  if (!count(h >> 1, 1) || !amf3_dense(a->dense, h >> 1)) return false;
  out = value::of(a);
  return true;
}

// An array's dense part, grown a block at a time so that a block is still in cache when its
// values are written over (grown all at once, a large array's memory is written twice).
bool reader::amf3_dense(std::pmr::vector<value>& dense, std::uint32_t n) {
  constexpr std::size_t block = 256;
  if (n > block) dense.reserve(n);
  for (std::size_t from = 0; from < n; from += block) {
    dense.resize(std::min<std::size_t>(n, from + block));
    for (value *v = dense.data() + from, *const end = dense.data() + dense.size(); v != end;) {
      if (remaining() >= 5 && *p_ == std::byte{0x04}) {
        value* const first = v;
        if ((v = integers(v, end)) != first) continue;  // none at the element limit
      }
      if (!amf3_member(*v++)) return false;
    }
  }
  return true;
}

// Integers from `v` on while their bytes are at hand and the element limit allows, with the
// cursor and the element count in locals (a store to a `value` may alias the members): where
// the first value that is not such an integer goes. That one is read as any other.
value* reader::integers(value* v, value* const end) {
  const std::byte* p = p_;
  std::size_t elements = elements_;
  const std::size_t max = opt_.max_elements;
  while (v != end && end_ - p >= 5 && *p == std::byte{0x04} && elements < max) {
    ++elements;
    *v++ = integer29(u29_unchecked(++p));
  }
  p_ = p;
  elements_ = elements;
  return v;
}

bool reader::amf3_object(const std::byte* tok, value& out) {
  std::uint32_t h;
  if (!u29(h)) return false;
  if ((h & 1) == 0) {
    if ((h >> 1) >= amf3_objects.size()) return fail(errc::bad_reference, tok);
    node* n = amf3_objects[h >> 1];
    if (n->kind != type::object && n->kind != type::externalizable) {
      return fail(errc::bad_reference, tok);
    }
    n->referenced = true;
    out = value::of(n);
    return true;
  }
  depth_guard g(*this);
  if (!g.ok(tok)) return false;
  const traits* t;
  if ((h & 2) == 0) {
    if ((h >> 2) >= traits_.size()) return fail(errc::bad_reference, tok);
    t = traits_[h >> 2];
  } else {
    auto* nt = doc_.create<traits>(doc_.resource());
    nt->externalizable = (h & 4) != 0;
    nt->dynamic = (h & 8) != 0;
    if (!string3(nt->alias)) return false;
    if (!nt->externalizable) {
      const std::uint32_t n = h >> 4;
      if (!count(n, 1)) return false;
      nt->sealed.resize(n);
      for (auto& name : nt->sealed) {
        if (!string3(name)) return false;
      }
    }
    if (traits_.size() >= opt_.max_references) return fail(errc::limit_exceeded, tok);
    traits_.push_back(nt);
    t = nt;
  }
  if (t->externalizable) return amf3_external(t, tok, out);

  auto* o = doc_.create<object_node>(t, doc_.resource());
  if (!add_object(amf3_objects, o) || !count(static_cast<std::uint32_t>(t->sealed.size()), 1)) {
    return false;
  }
  o->sealed.resize(t->sealed.size());
  for (auto& v : o->sealed) {
    if (!amf3_member(v)) return false;
  }
  if (t->dynamic && !amf3_members(o->dynamic)) return false;
  out = value::of(o);
  return true;
}

bool reader::amf3_external(const traits* t, const std::byte* tok, value& out) {
  auto* e = doc_.create<external_node>(t, doc_.resource());
  if (!add_object(amf3_objects, e)) return false;
  out = value::of(e);
  if (const class_codec* c = classes_->find(t->alias)) {
    external_reader in(*this);
    return c->read(in, *e);
  }
  if (!opt_.keep_unknown_externals) return fail(errc::unknown_externalizable, tok);
  e->layout = external_node::form::raw;
  return take(remaining(), e->raw);
}

bool reader::amf3_vector(type kind, const std::byte* tok, value& out) {
  std::uint32_t h;
  if (!u29(h)) return false;
  if ((h & 1) == 0) return reference<vector_node>(h >> 1, kind, tok, out);
  depth_guard g(*this);
  const std::uint32_t n = h >> 1;
  std::uint8_t fixed;
  if (!g.ok(tok) || !u8(fixed)) return false;
  auto* v = doc_.create<vector_node>(kind, doc_.resource());
  v->fixed = fixed != 0;
  if (!add_object(amf3_objects, v)) return false;
  out = value::of(v);
  switch (kind) {
    case type::vector_int:
      if (!count(n, 4)) return false;
      v->ints.resize(n);
      for (auto& x : v->ints) {
        x = static_cast<std::int32_t>(load32(p_));
        p_ += 4;
      }
      return true;
    case type::vector_uint:
      if (!count(n, 4)) return false;
      v->uints.resize(n);
      for (auto& x : v->uints) {
        x = load32(p_);
        p_ += 4;
      }
      return true;
    case type::vector_double: {
      if (!count(n, 8)) return false;
      v->doubles.resize(n);
      for (auto& d : v->doubles) f64(d);
      return true;
    }
    default: {
      if (!string3(v->type_name) || !count(n, 1)) return false;
      v->objects.resize(n);
      for (auto& x : v->objects) {
        if (!amf3(x)) return false;
      }
      return true;
    }
  }
}

bool reader::amf3_dictionary(const std::byte* tok, value& out) {
  std::uint32_t h;
  if (!u29(h)) return false;
  if ((h & 1) == 0) return reference<dictionary_node>(h >> 1, type::dictionary, tok, out);
  depth_guard g(*this);
  std::uint8_t weak;
  if (!g.ok(tok) || !u8(weak) || !count(h >> 1, 2)) return false;
  auto* d = doc_.create<dictionary_node>(doc_.resource());
  d->weak_keys = weak != 0;
  if (!add_object(amf3_objects, d)) return false;
  d->entries.resize(h >> 1);
  for (auto& e : d->entries) {
    if (!amf3(e.key) || !amf3(e.val)) return false;
  }
  out = value::of(d);
  return true;
}

}  // namespace detail

// ------------------------------------------------------------------------- public API

decoder::decoder(std::span<const std::byte> input, document& doc, const decode_options& opt)
    : r_(std::make_unique<detail::reader>(input, doc, opt)) {}
decoder::~decoder() = default;

namespace {
template <class F>
value read_with(detail::reader& r, decode_error& ec, F&& f) {
  r.clear_error();
  value v;
  if (!f(v)) {
    ec = r.error();
    return {};
  }
  ec = {};
  return v;
}
}  // namespace

value decoder::read_amf0(decode_error& ec) {
  return read_with(*r_, ec, [&](value& v) { return r_->amf0(v); });
}
value decoder::read_amf0_arguments(decode_error& ec) {
  return read_with(*r_, ec, [&](value& v) { return r_->amf0(v, true); });
}
value decoder::read_amf3(decode_error& ec) {
  return read_with(*r_, ec, [&](value& v) { return r_->amf3(v); });
}
void decoder::reset_tables() {
  r_->reset_tables();
}
std::size_t decoder::offset() const noexcept {
  return r_->offset();
}
bool decoder::at_end() const noexcept {
  return r_->remaining() == 0;
}
std::span<node* const> decoder::amf0_objects() const noexcept {
  return r_->amf0_objects;
}
std::span<node* const> decoder::amf3_objects() const noexcept {
  return r_->amf3_objects;
}

namespace {
// A reader of its own on the stack: a `decoder` keeps one on the heap.
value decode_whole(std::span<const std::byte> in, document& doc, decode_error& ec,
                   const decode_options& opt, bool amf3) {
  detail::reader r(in, doc, opt);
  value v = read_with(r, ec, [&](value& out) { return amf3 ? r.amf3(out) : r.amf0(out); });
  if (!ec && r.remaining() != 0) {
    ec = {make_error_code(errc::trailing_bytes), r.offset()};
    return {};
  }
  return v;
}
value or_throw(value v, const decode_error& ec) {
  if (ec) throw decode_exception(ec);
  return v;
}
}  // namespace

value decode_amf0(std::span<const std::byte> in, document& doc, decode_error& ec,
                  const decode_options& opt) {
  return decode_whole(in, doc, ec, opt, false);
}
value decode_amf0(std::span<const std::byte> in, document& doc, const decode_options& opt) {
  decode_error ec;
  value v = decode_whole(in, doc, ec, opt, false);
  return or_throw(v, ec);
}
value decode_amf3(std::span<const std::byte> in, document& doc, decode_error& ec,
                  const decode_options& opt) {
  return decode_whole(in, doc, ec, opt, true);
}
value decode_amf3(std::span<const std::byte> in, document& doc, const decode_options& opt) {
  decode_error ec;
  value v = decode_whole(in, doc, ec, opt, true);
  return or_throw(v, ec);
}

}  // namespace amf
