// Conversions between AMF values and C++ types: `amf::adaptor<T>`.
//
// Each adaptor gives
//   static std::string_view expected();                    // "int", for messages
//   static bool from_value(const value& v, T& out);        // false if `v` does not fit
//   static value to_value(document& doc, const T& x);      // builds the value in `doc`
//
// Built in: bool, integers, float and double, std::string, std::string_view (a view into the
// document), std::vector (and amf::array_collection / amf::array_list, which go out as Flex
// collections), std::map / std::unordered_map with string keys, std::optional,
// std::chrono::system_clock::time_point, and amf::value itself. User structs take one macro:
//
//   struct User { std::int32_t id; std::string name; std::optional<std::string> email; };
//   AMF_CLASS(User, "com.example.User", id, name, email)
//
// which maps a typed object of that class alias (members in that sealed order) to the struct
// and back. Objects of another alias, or anonymous ones (Ruffle sends every object
// anonymous), convert too when every member does. A member a client may leave null or out
// must be a std::optional: null fits nothing else. A failed conversion leaves the path to
// the member that did not fit in `conversion_failure::last()`.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "amf/externalizable.hpp"
#include "amf/value.hpp"

namespace amf {

template <class T, class Enable = void>
struct adaptor;

namespace detail {
// The values an array-like parameter accepts: a list (an array's dense part, a dense ECMA
// array), an ArrayCollection or ArrayList's source, or the items of an object vector.
inline std::optional<list_view> sequence_of(const value& v) {
  if (auto* e = v.as_external(); e && e->layout == external_node::form::single) {
    return sequence_of(e->payload);
  }
  if (auto* vec = v.as_vector(); vec && v.kind() == type::vector_object) {
    return list_view(vec->objects.data(), vec->objects.size());
  }
  return as_list(v);
}
}  // namespace detail

/// Where the last conversion on this thread failed, for a message that names the member:
/// `argument 1: [3].email: expected string, got int`. Adaptors of containers and classes
/// record it as the failure unwinds through them (`conversion_failure::at`); whoever reports
/// a failure calls `clear()` before converting and reads it after.
struct conversion_failure {
  std::vector<std::string> path;  ///< innermost first: "email", "[3]"
  std::string expected;           ///< what the innermost failing member expected
  value got;                      ///< what it held (valid while the converted value is)
  bool set = false;

  /// This thread's record.
  static conversion_failure& last() {
    thread_local conversion_failure f;
    return f;
  }
  static void clear() {
    auto& f = last();
    f.path.clear();
    f.set = false;
  }
  /// A member `segment` ("[3]", "email") of a container failed, holding `got` where an
  /// `expected` was wanted; recorded once per failure, at its innermost level.
  static void at(std::string segment, std::string_view expected, const value& got) {
    auto& f = last();
    if (!f.set) {
      f.set = true;
      f.expected = expected;
      f.got = got;
    }
    f.path.push_back(std::move(segment));
  }
  /// The path, outermost first: "[3].email".
  std::string where() const {
    std::string out;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (!out.empty() && it->front() != '[') out += '.';
      out += *it;
    }
    return out;
  }
};

template <>
struct adaptor<value> {
  static std::string_view expected() { return "any"; }
  static bool from_value(const value& v, value& out) {
    out = v;
    return true;
  }
  static value to_value(document&, const value& v) { return v; }
};

template <>
struct adaptor<bool> {
  static std::string_view expected() { return "boolean"; }
  static bool from_value(const value& v, bool& out) {
    if (v.kind() != type::boolean) return false;
    out = v.as_bool();
    return true;
  }
  static value to_value(document&, bool b) { return value::boolean(b); }
};

template <class T>
struct adaptor<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static std::string_view expected() { return "int"; }
  static bool from_value(const value& v, T& out) {
    if (!v.is_numeric()) return false;
    const double d = v.to_double();
    // Integral values that T can hold (Flash sends whole Numbers as doubles too). The bounds
    // are powers of two, exact as doubles: max() is not (2^63 - 1 rounds up to 2^63, and
    // converting 2^63 to int64_t is undefined), so the upper bound is exclusive.
    const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (std::trunc(d) != d || d < static_cast<double>(std::numeric_limits<T>::min()) ||
        d >= limit) {
      return false;
    }
    out = static_cast<T>(d);
    return true;
  }
  static value to_value(document&, T x) {
    if constexpr (std::is_signed_v<T>) {
      if (x >= -(1 << 28) && x < (1 << 28)) return value::integer(static_cast<std::int32_t>(x));
    } else {
      if (x < (1u << 28)) return value::integer(static_cast<std::int32_t>(x));
    }
    return value::number(static_cast<double>(x));
  }
};

template <class T>
struct adaptor<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static std::string_view expected() { return "number"; }
  static bool from_value(const value& v, T& out) {
    if (!v.is_numeric()) return false;
    out = static_cast<T>(v.to_double());
    return true;
  }
  static value to_value(document&, T x) { return value::number(static_cast<double>(x)); }
};

template <>
struct adaptor<std::string> {
  static std::string_view expected() { return "string"; }
  static bool from_value(const value& v, std::string& out) {
    if (v.kind() != type::string) return false;
    out.assign(v.as_string());
    return true;
  }
  static value to_value(document& doc, const std::string& s) { return doc.string(s); }
};

/// A view into the request's document: valid while the call runs.
template <>
struct adaptor<std::string_view> {
  static std::string_view expected() { return "string"; }
  static bool from_value(const value& v, std::string_view& out) {
    if (v.kind() != type::string) return false;
    out = v.as_string();
    return true;
  }
  static value to_value(document& doc, std::string_view s) { return doc.string(s); }
};

template <>
struct adaptor<std::chrono::system_clock::time_point> {
  using time_point = std::chrono::system_clock::time_point;
  static std::string_view expected() { return "date"; }
  static bool from_value(const value& v, time_point& out) {
    auto* d = v.as_date();
    if (!d || !std::isfinite(d->millis)) return false;
    out = time_point(std::chrono::duration_cast<time_point::duration>(
        std::chrono::duration<double, std::milli>(d->millis)));
    return true;
  }
  static value to_value(document& doc, time_point t) {
    return doc.date(std::chrono::duration<double, std::milli>(t.time_since_epoch()).count());
  }
};

template <class T>
struct adaptor<std::optional<T>> {
  static std::string_view expected() { return adaptor<T>::expected(); }
  static bool from_value(const value& v, std::optional<T>& out) {
    if (v.is_null() || v.is_undefined()) {
      out.reset();
      return true;
    }
    T x{};
    if (!adaptor<T>::from_value(v, x)) return false;
    out = std::move(x);
    return true;
  }
  static value to_value(document& doc, const std::optional<T>& x) {
    return x ? adaptor<T>::to_value(doc, *x) : value::null();
  }
};

namespace detail {
template <class Sequence>
struct sequence_adaptor {
  using item = typename Sequence::value_type;
  static std::string_view expected() { return "array"; }
  static bool from_value(const value& v, Sequence& out) {
    const auto items = detail::sequence_of(v);
    if (!items) return false;
    out.clear();
    out.reserve(items->size());
    for (std::size_t i = 0; i < items->size(); ++i) {
      item x{};
      if (!adaptor<item>::from_value((*items)[i], x)) {
        conversion_failure::at("[" + std::to_string(i) + "]", adaptor<item>::expected(),
                               (*items)[i]);
        return false;
      }
      out.push_back(std::move(x));
    }
    return true;
  }
  static value to_value(document& doc, const Sequence& xs) {
    array_node* a = doc.array(xs.size());
    for (const auto& x : xs) a->dense.push_back(adaptor<item>::to_value(doc, x));
    return value::of(a);
  }
};
}  // namespace detail

template <class T, class A>
struct adaptor<std::vector<T, A>> : detail::sequence_adaptor<std::vector<T, A>> {};

/// A list that goes to Flex as an mx.collections.ArrayCollection
/// (flex.messaging.io.ArrayCollection), what Flex applications bind grids and lists to; and
/// one that goes as an ArrayList. Either reads an array, an ArrayCollection or an ArrayList.
template <class T>
struct array_collection : std::vector<T> {
  using std::vector<T>::vector;
  static constexpr std::string_view alias = array_collection_alias;
};
template <class T>
struct array_list : std::vector<T> {
  using std::vector<T>::vector;
  static constexpr std::string_view alias = array_list_alias;
};

namespace detail {
template <class Collection>
struct collection_adaptor : sequence_adaptor<Collection> {
  static std::string_view expected() { return Collection::alias; }
  static value to_value(document& doc, const Collection& xs) {
    traits* t = doc.create<traits>(doc.resource());
    t->alias = Collection::alias;
    t->externalizable = true;
    external_node* e = doc.external(t);
    e->layout = external_node::form::single;
    e->payload = sequence_adaptor<Collection>::to_value(doc, xs);
    return value::of(e);
  }
};
}  // namespace detail

template <class T>
struct adaptor<array_collection<T>> : detail::collection_adaptor<array_collection<T>> {};
template <class T>
struct adaptor<array_list<T>> : detail::collection_adaptor<array_list<T>> {};

namespace detail {
template <class Map>
struct map_adaptor {
  using mapped = typename Map::mapped_type;
  static std::string_view expected() { return "object"; }
  static bool from_value(const value& v, Map& out) {
    out.clear();
    auto put = [&](std::string_view k, const value& e) {
      mapped x{};
      if (!adaptor<mapped>::from_value(e, x)) {
        conversion_failure::at(std::string(k), adaptor<mapped>::expected(), e);
        return false;
      }
      out.emplace(std::string(k), std::move(x));
      return true;
    };
    if (auto* o = v.as_object()) {
      for (std::size_t i = 0; i < o->sealed.size() && i < o->cls->sealed.size(); ++i) {
        if (!put(o->cls->sealed[i], o->sealed[i])) return false;
      }
      for (const auto& m : o->dynamic) {
        if (!put(m.name, m.val)) return false;
      }
      return true;
    }
    if (auto* a = v.as_array()) {
      for (const auto& m : a->assoc) {
        if (!put(m.name, m.val)) return false;
      }
      return true;
    }
    return false;
  }
  static value to_value(document& doc, const Map& m) {
    object_node* o = doc.object();
    for (const auto& [k, x] : m)
      o->dynamic.push_back({doc.copy(k), adaptor<mapped>::to_value(doc, x)});
    return value::of(o);
  }
};
}  // namespace detail

template <class V, class C, class A>
struct adaptor<std::map<std::string, V, C, A>>
    : detail::map_adaptor<std::map<std::string, V, C, A>> {};
template <class V, class H, class E, class A>
struct adaptor<std::unordered_map<std::string, V, H, E, A>>
    : detail::map_adaptor<std::unordered_map<std::string, V, H, E, A>> {};

/// One member of a class declared with AMF_CLASS.
template <class C, class M>
struct class_member {
  std::string_view name;
  M C::*ptr;
};

/// The adaptor behind AMF_CLASS: `Derived` provides `alias` and `members()`.
template <class C, class Derived>
struct class_adaptor {
  static std::string_view expected() { return Derived::alias; }

  static bool from_value(const value& v, C& out) {
    const object_node* o = v.as_object();
    if (!o) return false;
    bool ok = true;
    std::apply([&](const auto&... m) { ((ok = ok && member_from(*o, m.name, out.*(m.ptr))), ...); },
               Derived::members());
    return ok;
  }

  static value to_value(document& doc, const C& x) {
    const traits* t = class_traits(doc);
    object_node* o = doc.object(t);
    std::size_t i = 0;
    std::apply(
        [&](const auto&... m) {
          ((o->sealed[i++] =
                adaptor<std::remove_cvref_t<decltype(x.*(m.ptr))>>::to_value(doc, x.*(m.ptr))),
           ...);
        },
        Derived::members());
    return value::of(o);
  }

 private:
  // A missing member is undefined: fine only where the C++ type has room for "absent"
  // (std::optional).
  template <class M>
  static bool member_from(const object_node& o, std::string_view name, M& out) {
    const value* v = o.find(name);
    const value got = v ? *v : value::undefined();
    if (adaptor<M>::from_value(got, out)) return true;
    conversion_failure::at(std::string(name), adaptor<M>::expected(), got);
    return false;
  }
  static const traits* class_traits(document& doc) {
    traits* t = doc.create<traits>(doc.resource());
    t->alias = Derived::alias;
    std::apply([&](const auto&... m) { (t->sealed.push_back(m.name), ...); }, Derived::members());
    return t;
  }
};

}  // namespace amf

#define AMF_DETAIL_MEMBER(Type, m)               \
  ::amf::class_member<Type, decltype(Type::m)> { \
#m, &Type::m                                 \
  }
#define AMF_DETAIL_EXPAND(x) x
#define AMF_DETAIL_M1(T, a) AMF_DETAIL_MEMBER(T, a)
#define AMF_DETAIL_M2(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M1(T, __VA_ARGS__))
#define AMF_DETAIL_M3(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M2(T, __VA_ARGS__))
#define AMF_DETAIL_M4(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M3(T, __VA_ARGS__))
#define AMF_DETAIL_M5(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M4(T, __VA_ARGS__))
#define AMF_DETAIL_M6(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M5(T, __VA_ARGS__))
#define AMF_DETAIL_M7(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M6(T, __VA_ARGS__))
#define AMF_DETAIL_M8(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M7(T, __VA_ARGS__))
#define AMF_DETAIL_M9(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M8(T, __VA_ARGS__))
#define AMF_DETAIL_M10(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M9(T, __VA_ARGS__))
#define AMF_DETAIL_M11(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M10(T, __VA_ARGS__))
#define AMF_DETAIL_M12(T, a, ...) \
  AMF_DETAIL_MEMBER(T, a), AMF_DETAIL_EXPAND(AMF_DETAIL_M11(T, __VA_ARGS__))
#define AMF_DETAIL_COUNT(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define AMF_DETAIL_PICK(...)                                                                      \
  AMF_DETAIL_EXPAND(AMF_DETAIL_COUNT(__VA_ARGS__, AMF_DETAIL_M12, AMF_DETAIL_M11, AMF_DETAIL_M10, \
                                     AMF_DETAIL_M9, AMF_DETAIL_M8, AMF_DETAIL_M7, AMF_DETAIL_M6,  \
                                     AMF_DETAIL_M5, AMF_DETAIL_M4, AMF_DETAIL_M3, AMF_DETAIL_M2,  \
                                     AMF_DETAIL_M1, unused))

/// Declares the class alias and the sealed members (up to 12, in order) of a struct.
/// Use at namespace scope, outside any namespace of your own.
#define AMF_CLASS(Type, Alias, ...)                                                               \
  template <>                                                                                     \
  struct amf::adaptor<Type> : ::amf::class_adaptor<Type, ::amf::adaptor<Type>> {                  \
    static constexpr std::string_view alias = Alias;                                              \
    static auto members() {                                                                       \
      return std::make_tuple(AMF_DETAIL_EXPAND(AMF_DETAIL_PICK(__VA_ARGS__)(Type, __VA_ARGS__))); \
    }                                                                                             \
  }
