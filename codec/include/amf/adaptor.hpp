// Conversions between AMF values and C++ types: `amf::adaptor<T>`.
//
// Each adaptor gives
//   static std::string_view expected();                    // "int", for messages
//   static bool from_value(const value& v, T& out);        // false if `v` does not fit
//   static value to_value(document& doc, const T& x);      // builds the value in `doc`
//
// Built in: bool, integers, float and double, std::string, std::string_view (a view into the
// document), std::vector, std::map / std::unordered_map with string keys, std::optional,
// std::chrono::system_clock::time_point, and amf::value itself. User structs take one macro:
//
//   struct User { std::int32_t id; std::string name; };
//   AMF_CLASS(User, "com.example.User", id, name)
//
// which maps a typed object of that class alias (members in that sealed order) to the struct
// and back. Objects of another alias, or anonymous ones, convert too when every member does.
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

#include "amf/value.hpp"

namespace amf {

template <class T, class Enable = void>
struct adaptor;

namespace detail {
// The values an array-like parameter accepts: an array's dense part, an ArrayCollection or
// ArrayList's source, or the items of an object vector.
inline const std::pmr::vector<value>* sequence_of(const value& v) {
  if (auto* a = v.as_array(); a && v.kind() == type::array) return &a->dense;
  if (auto* e = v.as_external(); e && e->layout == external_node::form::single) {
    return sequence_of(e->payload);
  }
  if (auto* vec = v.as_vector(); vec && v.kind() == type::vector_object) return &vec->objects;
  return nullptr;
}
}  // namespace detail

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

template <class T, class A>
struct adaptor<std::vector<T, A>> {
  static std::string_view expected() { return "array"; }
  static bool from_value(const value& v, std::vector<T, A>& out) {
    const auto* items = detail::sequence_of(v);
    if (!items) return false;
    out.clear();
    out.reserve(items->size());
    for (const auto& e : *items) {
      T x{};
      if (!adaptor<T>::from_value(e, x)) return false;
      out.push_back(std::move(x));
    }
    return true;
  }
  static value to_value(document& doc, const std::vector<T, A>& xs) {
    array_node* a = doc.array(xs.size());
    for (const auto& x : xs) a->dense.push_back(adaptor<T>::to_value(doc, x));
    return value::of(a);
  }
};

namespace detail {
template <class Map>
struct map_adaptor {
  using mapped = typename Map::mapped_type;
  static std::string_view expected() { return "object"; }
  static bool from_value(const value& v, Map& out) {
    out.clear();
    auto put = [&](std::string_view k, const value& e) {
      mapped x{};
      if (!adaptor<mapped>::from_value(e, x)) return false;
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
  template <class M>
  static bool member_from(const object_node& o, std::string_view name, M& out) {
    const value* v = o.find(name);
    if (!v) {
      // A missing member is fine only where the C++ type has room for "absent".
      value absent = value::undefined();
      return adaptor<M>::from_value(absent, out);
    }
    return adaptor<M>::from_value(*v, out);
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
