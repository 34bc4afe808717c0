#include "amf/value.hpp"

#include <bit>
#include <charconv>
#include <cstring>
#include <string>
#include <unordered_map>

#include "amf/error.hpp"

namespace amf {

namespace {
class category : public std::error_category {
 public:
  const char* name() const noexcept override { return "amf"; }
  std::string message(int e) const override {
    switch (static_cast<errc>(e)) {
      case errc::truncated:
        return "input ends inside a value";
      case errc::unknown_marker:
        return "unknown type marker";
      case errc::bad_reference:
        return "reference to a missing or mismatched table entry";
      case errc::depth_exceeded:
        return "values nested too deeply";
      case errc::limit_exceeded:
        return "decode limit exceeded";
      case errc::length_exceeds_input:
        return "length larger than the input left";
      case errc::unknown_externalizable:
        return "externalizable class with no codec";
      case errc::bad_external:
        return "externalizable payload does not fit its class";
      case errc::bad_packet_version:
        return "unsupported packet version";
      case errc::trailing_bytes:
        return "bytes left after the value";
    }
    return "unknown amf error";
  }
};
}  // namespace

const std::error_category& error_category() noexcept {
  static const category c;
  return c;
}

std::string decode_error::message() const {
  return code.message() + " at byte " + std::to_string(offset);
}

std::string_view type_name(type t) noexcept {
  switch (t) {
    case type::undefined:
      return "undefined";
    case type::null:
      return "null";
    case type::boolean:
      return "boolean";
    case type::integer:
      return "int";
    case type::number:
      return "double";
    case type::string:
      return "string";
    case type::unsupported:
      return "unsupported";
    case type::date:
      return "date";
    case type::object:
      return "object";
    case type::array:
      return "array";
    case type::ecma_array:
      return "ecma array";
    case type::byte_array:
      return "byte array";
    case type::xml:
      return "xml";
    case type::xml_document:
      return "xml document";
    case type::vector_int:
      return "vector of int";
    case type::vector_uint:
      return "vector of uint";
    case type::vector_double:
      return "vector of double";
    case type::vector_object:
      return "vector of object";
    case type::dictionary:
      return "dictionary";
    case type::externalizable:
      return "externalizable";
  }
  return "unknown";
}

bool traits::same_as(const traits& o) const noexcept {
  return alias == o.alias && dynamic == o.dynamic && externalizable == o.externalizable &&
         std::equal(sealed.begin(), sealed.end(), o.sealed.begin(), o.sealed.end());
}

const value* object_node::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < sealed.size() && i < cls->sealed.size(); ++i) {
    if (cls->sealed[i] == name) return &sealed[i];
  }
  for (const auto& m : dynamic) {
    if (m.name == name) return &m.val;
  }
  return nullptr;
}

std::size_t vector_node::size() const noexcept {
  switch (kind) {
    case type::vector_int:
      return ints.size();
    case type::vector_uint:
      return uints.size();
    case type::vector_double:
      return doubles.size();
    default:
      return objects.size();
  }
}

std::string_view document::copy(std::string_view s) {
  if (s.empty()) return {};
  auto* p = static_cast<char*>(arena_.allocate(s.size(), 1));
  std::memcpy(p, s.data(), s.size());
  return {p, s.size()};
}

std::span<const std::byte> document::copy(std::span<const std::byte> b) {
  auto s = copy(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

traits* document::make_traits(std::string_view alias, bool dynamic,
                              std::initializer_list<std::string_view> sealed) {
  auto* t = create<traits>(resource());
  t->alias = copy(alias);
  t->dynamic = dynamic;
  for (auto n : sealed) t->sealed.push_back(copy(n));
  return t;
}

object_node* document::object(const traits* t) {
  auto* o = create<object_node>(t, resource());
  o->sealed.resize(t->sealed.size());
  return o;
}

object_node* document::object() {
  return object(anonymous_traits());
}

array_node* document::array(std::size_t reserve) {
  auto* a = create<array_node>(type::array, resource());
  a->dense.reserve(reserve);
  return a;
}

const traits* document::anonymous_traits() {
  if (!anonymous_) anonymous_ = make_traits("", true);
  return anonymous_;
}

std::optional<list_view> as_list(const value& v) noexcept {
  const array_node* a = v.as_array();
  if (!a) return std::nullopt;
  if (v.kind() == type::array) return list_view(a->dense.data(), a->dense.size());
  char digits[24];
  for (std::size_t i = 0; i < a->assoc.size(); ++i) {
    const char* end = std::to_chars(digits, digits + sizeof digits, i).ptr;
    if (a->assoc[i].name != std::string_view(digits, static_cast<std::size_t>(end - digits))) {
      return std::nullopt;
    }
  }
  return list_view(a->assoc.data(), a->assoc.size());
}

// ------------------------------------------------------------------------- equivalent

namespace {
class equivalence {
 public:
  explicit equivalence(bool tz) : tz_(tz) {}

  bool same(const value& a, const value& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
      case type::undefined:
      case type::null:
      case type::unsupported:
        return true;
      case type::boolean:
        return a.as_bool() == b.as_bool();
      case type::integer:
        return a.as_int() == b.as_int();
      case type::number:
        return bits(a.as_double()) == bits(b.as_double());
      case type::string:
        return a.as_string() == b.as_string();
      default:
        break;
    }
    node* x = a.as_node();
    node* y = b.as_node();
    // Sharing: a node of `a` maps to exactly one node of `b` and back.
    auto [ix, fresh_x] = ab_.emplace(x, y);
    auto [iy, fresh_y] = ba_.emplace(y, x);
    if (!fresh_x || !fresh_y) return ix->second == y && iy->second == x;
    return same_node(a, b);
  }

 private:
  static std::uint64_t bits(double d) { return std::bit_cast<std::uint64_t>(d); }

  bool same_traits(const traits* a, const traits* b) { return a == b || a->same_as(*b); }

  bool same_members(const std::pmr::vector<member>& a, const std::pmr::vector<member>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].name != b[i].name || !same(a[i].val, b[i].val)) return false;
    }
    return true;
  }
  bool same_values(const std::pmr::vector<value>& a, const std::pmr::vector<value>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  }

  bool same_node(const value& a, const value& b) {
    switch (a.kind()) {
      case type::date:
        return bits(a.as_date()->millis) == bits(b.as_date()->millis) &&
               (!tz_ || a.as_date()->timezone == b.as_date()->timezone);
      case type::object: {
        auto *x = a.as_object(), *y = b.as_object();
        return same_traits(x->cls, y->cls) && same_values(x->sealed, y->sealed) &&
               same_members(x->dynamic, y->dynamic);
      }
      case type::array:
      case type::ecma_array: {
        auto *x = a.as_array(), *y = b.as_array();
        return same_values(x->dense, y->dense) && same_members(x->assoc, y->assoc) &&
               (a.kind() == type::array || x->ecma_count == y->ecma_count);
      }
      case type::byte_array: {
        auto x = a.as_bytes()->bytes, y = b.as_bytes()->bytes;
        return std::equal(x.begin(), x.end(), y.begin(), y.end());
      }
      case type::xml:
      case type::xml_document:
        return a.as_xml()->text == b.as_xml()->text;
      case type::vector_int:
      case type::vector_uint:
      case type::vector_double:
      case type::vector_object: {
        auto *x = a.as_vector(), *y = b.as_vector();
        if (x->fixed != y->fixed || x->type_name != y->type_name || x->ints != y->ints ||
            x->uints != y->uints || x->doubles.size() != y->doubles.size()) {
          return false;
        }
        for (std::size_t i = 0; i < x->doubles.size(); ++i) {
          if (bits(x->doubles[i]) != bits(y->doubles[i])) return false;
        }
        return same_values(x->objects, y->objects);
      }
      case type::dictionary: {
        auto *x = a.as_dictionary(), *y = b.as_dictionary();
        if (x->weak_keys != y->weak_keys || x->entries.size() != y->entries.size()) return false;
        for (std::size_t i = 0; i < x->entries.size(); ++i) {
          if (!same(x->entries[i].key, y->entries[i].key) ||
              !same(x->entries[i].val, y->entries[i].val)) {
            return false;
          }
        }
        return true;
      }
      case type::externalizable: {
        auto *x = a.as_external(), *y = b.as_external();
        if (!same_traits(x->cls, y->cls) || x->layout != y->layout) return false;
        switch (x->layout) {
          case external_node::form::single:
            return same(x->payload, y->payload);
          case external_node::form::small_message:
            return same_members(x->payload.as_object()->dynamic, y->payload.as_object()->dynamic);
          case external_node::form::raw:
            return std::equal(x->raw.begin(), x->raw.end(), y->raw.begin(), y->raw.end());
          case external_node::form::ops:
            if (x->ops.size() != y->ops.size()) return false;
            for (std::size_t i = 0; i < x->ops.size(); ++i) {
              const auto &p = x->ops[i], &q = y->ops[i];
              if (p.kind != q.kind || p.length != q.length || p.charset != q.charset ||
                  !same(p.val, q.val)) {
                return false;
              }
            }
            return true;
        }
        return false;
      }
      default:
        return false;
    }
  }

  bool tz_;
  std::unordered_map<node*, node*> ab_, ba_;
};
}  // namespace

bool equivalent(const value& a, const value& b, bool compare_timezone) {
  return equivalence(compare_timezone).same(a, b);
}

}  // namespace amf
