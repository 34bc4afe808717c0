#include "amf/json.hpp"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "charset.hpp"
#include "small_message.hpp"

namespace amf::json {

std::string to_hex(std::span<const std::byte> b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (auto c : b) {
    s += digits[std::to_integer<unsigned>(c) >> 4];
    s += digits[std::to_integer<unsigned>(c) & 15];
  }
  return s;
}

std::string from_hex(std::string_view hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2) throw error("odd number of hex digits");
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) throw error("not a hex digit in \"" + std::string(hex) + "\"");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    std::uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

ordered_json text(std::string_view s) {
  if (valid_utf8(s)) return std::string(s);
  return ordered_json{{"$badutf8", to_hex(bytes_of(s))}};
}

// Real member names that start with "$" get one more "$".
std::string escape(std::string_view name) {
  std::string r;
  if (name.starts_with('$')) r.push_back('$');
  r.append(name);
  return r;
}
std::string unescape(const std::string& key) {
  return key.starts_with("$$") ? key.substr(1) : key;
}

ordered_json number(double d) {
  if (std::isnan(d)) {
    char bits[17];
    std::snprintf(bits, sizeof bits, "%016llx",
                  static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(d)));
    return ordered_json{{"$double", "NaN"}, {"$bits", bits}};
  }
  if (std::isinf(d)) return ordered_json{{"$double", d > 0 ? "Infinity" : "-Infinity"}};
  if (d == 0 && std::signbit(d)) return ordered_json{{"$double", "-0.0"}};
  return d;
}

constexpr std::string_view op_names[] = {"bool",     "byte",      "ubyte", "short",  "ushort",
                                         "int",      "uint",      "float", "double", "utf",
                                         "utfbytes", "multibyte", "object"};

bool fits_amf0(type t) {
  return t <= type::ecma_array || t == type::xml_document;
}

const char* level_name(int level, char third) {
  if (level == 0) return "abstract";
  if (level == 1) return "async";
  return third == 'C' ? "command" : "ack";
}

}  // namespace

// ------------------------------------------------------------------------------ writer

void writer::reset() {
  amf0_.clear();
  amf3_.clear();
}

ordered_json writer::packet(const amf::packet& p) {
  ordered_json j;
  j["version"] = p.version;
  j["headers"] = ordered_json::array();
  for (const auto& h : p.headers) {
    reset();
    j["headers"].push_back({{"name", text(h.name)},
                            {"must_understand", h.must_understand},
                            {"length", h.length},
                            {"value", amf0(h.val)}});
  }
  j["bodies"] = ordered_json::array();
  for (const auto& b : p.bodies) {
    reset();
    j["bodies"].push_back({{"target", text(b.target)},
                           {"response", text(b.response)},
                           {"length", b.length},
                           {"value", render(b.val, false, b.is_request())}});
  }
  return j;
}

// Renders {"$ref": n} and returns true if `n` is in the table in force; else enters it.
void writer::charge(std::size_t bytes) {
  if (bytes > left_) {
    throw error("the rendering is larger than " + std::to_string(max_) +
                " bytes (it repeats what the packet references)");
  }
  left_ -= bytes;
}

bool writer::reference(const node* n, bool amf3, ordered_json& j) {
  auto& table = amf3 ? amf3_ : amf0_;
  auto [it, fresh] = table.emplace(n, static_cast<std::uint32_t>(table.size()));
  if (fresh) return false;
  j = ordered_json{{"$ref", it->second}};
  return true;
}

ordered_json writer::members(const object_node& o, bool amf3, ordered_json j) {
  const auto& names = o.cls->sealed;
  for (std::size_t i = 0; i < names.size(); ++i) {
    charge(names[i].size());
    j[escape(names[i])] = render(i < o.sealed.size() ? o.sealed[i] : value{}, amf3, false);
  }
  // A repeated name cannot be a JSON key twice: the whole dynamic part then goes as a list.
  std::unordered_set<std::string_view> seen(names.begin(), names.end());
  bool repeats = false;
  for (const auto& m : o.dynamic) {
    charge(m.name.size());
    repeats |= !seen.insert(m.name).second;
  }
  if (repeats && amf3) {
    auto list = ordered_json::array();
    for (const auto& m : o.dynamic) list.push_back({text(m.name), render(m.val, amf3, false)});
    j["$dynamic_members"] = std::move(list);
    return j;
  }
  for (const auto& m : o.dynamic) {
    const std::string key = escape(m.name);
    if (j.contains(key)) {  // AMF0 repeats: the first one stands
      render(m.val, amf3, false);
      continue;
    }
    j[key] = render(m.val, amf3, false);
  }
  return j;
}

ordered_json writer::render(const value& v, bool amf3, bool arguments) {
  charge(16);
  if (v.kind() == type::string) charge(v.as_string().size());
  if (!amf3 && (v.has_flag(value::avmplus) || !fits_amf0(v.kind()))) {
    return ordered_json{{"$amf3", render(v, true, false)}};
  }
  ordered_json j;
  switch (v.kind()) {
    case type::undefined:
      return ordered_json{{"$undefined", true}};
    case type::null:
      return nullptr;
    case type::unsupported:
      return ordered_json{{"$unsupported", true}};
    case type::boolean:
      return v.as_bool();
    case type::integer:
      if (amf3 && v.as_int() >= -(1 << 28) && v.as_int() < (1 << 28)) {
        return ordered_json{{"$int", v.as_int()}};
      }
      return static_cast<double>(v.as_int());
    case type::number:
      return number(v.as_double());
    case type::string:
      if (!amf3 && (v.has_flag(value::long_string) || v.as_string().size() > 0xFFFF)) {
        return ordered_json{{"$longstring", text(v.as_string())}};
      }
      return text(v.as_string());
    case type::date: {
      auto* d = v.as_date();
      if (reference(d, amf3, j)) return j;
      j = ordered_json{{"$date", number(d->millis)}};
      if (!amf3) j["$tz"] = d->timezone;
      return j;
    }
    case type::object: {
      auto* o = v.as_object();
      if (reference(o, amf3, j)) return j;
      const traits& t = *o->cls;
      if (!amf3) {
        j = ordered_json::object();
        if (!t.alias.empty()) j["$class"] = text(t.alias);
        return members(*o, false, std::move(j));
      }
      if (t.alias.empty() && t.dynamic && t.sealed.empty()) {
        std::unordered_set<std::string_view> seen;
        bool repeats = false;
        for (const auto& m : o->dynamic) repeats |= !seen.insert(m.name).second;
        if (!repeats) return members(*o, true, ordered_json::object());
      }
      j = ordered_json{{"$class", text(t.alias)}, {"$sealed", ordered_json::array()}};
      for (auto n : t.sealed) j["$sealed"].push_back(text(n));
      j["$dynamic"] = t.dynamic;
      return members(*o, true, std::move(j));
    }
    case type::array: {
      auto* a = v.as_array();
      // Only a strict array is left out of the table as the argument array.
      if ((amf3 || !arguments || !a->assoc.empty()) && reference(a, amf3, j)) return j;
      if (a->assoc.empty()) {
        j = ordered_json::array();
        for (const auto& e : a->dense) j.push_back(render(e, amf3, false));
        return j;
      }
      ordered_json assoc = ordered_json::object();
      if (!amf3) {  // written as an ECMA array, indices first
        for (std::size_t i = 0; i < a->dense.size(); ++i) {
          assoc[std::to_string(i)] = render(a->dense[i], false, false);
        }
        for (const auto& m : a->assoc) assoc[escape(m.name)] = render(m.val, false, false);
        return ordered_json{{"$ecma", std::move(assoc)}, {"$count", a->dense.size()}};
      }
      for (const auto& m : a->assoc) assoc[escape(m.name)] = render(m.val, true, false);
      ordered_json dense = ordered_json::array();
      for (const auto& e : a->dense) dense.push_back(render(e, true, false));
      return ordered_json{{"$assoc", std::move(assoc)}, {"$dense", std::move(dense)}};
    }
    case type::ecma_array: {
      auto* a = v.as_array();
      if (reference(a, amf3, j)) return j;
      ordered_json assoc = ordered_json::object();
      for (const auto& m : a->assoc) {
        auto key = escape(m.name);
        auto val = render(m.val, amf3, false);
        if (!assoc.contains(key)) assoc[key] = std::move(val);
      }
      if (amf3) {
        if (assoc.empty()) return ordered_json::array();
        return ordered_json{{"$assoc", std::move(assoc)}, {"$dense", ordered_json::array()}};
      }
      return ordered_json{{"$ecma", std::move(assoc)}, {"$count", a->ecma_count}};
    }
    case type::byte_array:
      if (reference(v.as_node(), amf3, j)) return j;
      charge(2 * v.as_bytes()->bytes.size());
      return ordered_json{{"$bytes", to_hex(v.as_bytes()->bytes)}};
    case type::xml:
    case type::xml_document:
      if (amf3 && reference(v.as_node(), amf3, j)) return j;
      charge(v.as_xml()->text.size());
      return ordered_json{{v.kind() == type::xml ? "$xml" : "$xmldoc", text(v.as_xml()->text)}};
    case type::vector_int:
    case type::vector_uint:
    case type::vector_double:
    case type::vector_object: {
      auto* vec = v.as_vector();
      if (reference(vec, amf3, j)) return j;
      static constexpr const char* names[] = {"int", "uint", "double", "object"};
      j = ordered_json{
          {"$vector", names[static_cast<int>(v.kind()) - static_cast<int>(type::vector_int)]},
          {"$fixed", vec->fixed}};
      if (v.kind() == type::vector_object) j["$type"] = text(vec->type_name);
      charge(16 * (vec->ints.size() + vec->uints.size() + vec->doubles.size()));
      auto items = ordered_json::array();
      for (auto x : vec->ints) items.push_back(x);
      for (auto x : vec->uints) items.push_back(x);
      for (auto x : vec->doubles) items.push_back(number(x));
      for (const auto& x : vec->objects) items.push_back(render(x, true, false));
      j["$items"] = std::move(items);
      return j;
    }
    case type::dictionary: {
      auto* d = v.as_dictionary();
      if (reference(d, amf3, j)) return j;
      auto pairs = ordered_json::array();
      for (const auto& e : d->entries) {
        auto key = render(e.key, true, false);
        pairs.push_back({std::move(key), render(e.val, true, false)});
      }
      return ordered_json{{"$dictionary", std::move(pairs)}, {"$weak", d->weak_keys}};
    }
    case type::externalizable: {
      auto* e = v.as_external();
      if (reference(e, amf3, j)) return j;
      j = ordered_json{{"$class", text(e->cls->alias)},
                       {"$externalizable", true},
                       {"$dynamic", e->cls->dynamic}};
      j["$external"] = external(*e);
      return j;
    }
  }
  return nullptr;
}

ordered_json writer::external(const external_node& e) {
  switch (e.layout) {
    case external_node::form::single:
      return render(e.payload, true, false);
    case external_node::form::raw:
      return ordered_json{{"$external_bytes", to_hex(e.raw)}};
    case external_node::form::ops: {
      auto ops = ordered_json::array();
      for (const auto& op : e.ops) {
        ordered_json o = ordered_json::array({op_names[op.kind]});
        if (op.kind == external_op::utf_bytes || op.kind == external_op::multi_byte) {
          o.push_back(op.length);
        }
        if (op.kind == external_op::multi_byte) o.push_back(text(op.charset));
        switch (op.kind) {
          case external_op::boolean:
            o.push_back(op.val.as_bool());
            break;
          case external_op::unsigned_int:
            o.push_back(static_cast<std::uint32_t>(op.val.to_double()));
            break;
          case external_op::float_:
          case external_op::double_:
            o.push_back(number(op.val.to_double()));
            break;
          case external_op::utf:
          case external_op::utf_bytes:
          case external_op::multi_byte:
            o.push_back(text(op.val.as_string()));
            break;
          case external_op::object:
            o.push_back(render(op.val, true, false));
            break;
          default:
            o.push_back(op.val.as_int());
            break;
        }
        ops.push_back(std::move(o));
      }
      return ordered_json{{"$ops", std::move(ops)}};
    }
    case external_node::form::small_message: {
      ordered_json j = ordered_json::object();
      if (auto* f = e.payload.as_object()) {
        for (const auto& m : f->dynamic) j[escape(m.name)] = render(m.val, true, false);
      }
      const char third = small_message_kind(e.cls->alias);
      ordered_json flags = ordered_json::object();
      for (int level = 0; level < (third == 0 ? 2 : 3); ++level) {
        flags[level_name(level, third)] = e.flags[level];
      }
      j["$flags"] = std::move(flags);
      return j;
    }
  }
  return nullptr;
}

// ------------------------------------------------------------------------------ reader

struct reader::path_segment {
  path_segment(reader& r, std::string s) : r_(r) { r_.path_.push_back(std::move(s)); }
  ~path_segment() { r_.path_.pop_back(); }
  path_segment(const path_segment&) = delete;
  path_segment& operator=(const path_segment&) = delete;
  reader& r_;
};

void reader::fail(const std::string& message) const {
  std::string p;
  for (const auto& s : path_) p += "/" + s;
  throw error((p.empty() ? "/" : p) + ": " + message);
}

template <class T>
T reader::integer(const ordered_json& v) const {
  using limits = std::numeric_limits<T>;
  bool fits = false;
  if (v.is_number_unsigned()) {
    fits = v.get<std::uint64_t>() <= static_cast<std::uint64_t>(limits::max());
  } else if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    fits = n < 0 ? limits::is_signed && n >= static_cast<std::int64_t>(limits::min())
                 : static_cast<std::uint64_t>(n) <= static_cast<std::uint64_t>(limits::max());
  }
  if (!fits) {
    fail("expected an integer from " + std::to_string(limits::min()) + " to " +
         std::to_string(limits::max()) + ", got " + v.dump().substr(0, 40));
  }
  return v.get<T>();
}

void reader::reset() {
  amf0_.clear();
  amf3_.clear();
}

void reader::seed(std::span<node* const> amf0_objects, std::span<node* const> amf3_objects) {
  amf0_.assign(amf0_objects.begin(), amf0_objects.end());
  amf3_.assign(amf3_objects.begin(), amf3_objects.end());
}

value reader::amf0(const ordered_json& j) {
  return parse(j, false);
}
value reader::amf0_arguments(const ordered_json& j) {
  return parse(j, false, true);
}
value reader::amf3(const ordered_json& j) {
  return parse(j, true);
}

amf::packet reader::packet(const ordered_json& j) {
  amf::packet p(doc_.resource());
  auto field = [&](const ordered_json& o, const char* key) -> const ordered_json& {
    if (!o.is_object() || !o.contains(key)) fail(std::string("missing \"") + key + "\"");
    return o[key];
  };
  auto str = [&](const ordered_json& o, const char* key) {
    const auto& s = field(o, key);
    if (!s.is_string()) fail(std::string("\"") + key + "\" must be a string");
    return doc_.copy(s.get_ref<const std::string&>());
  };
  auto length = [&](const ordered_json& o) {
    if (!o.contains("length")) return unknown_length;
    return integer<std::uint32_t>(o["length"]);
  };
  p.version = integer<std::uint16_t>(field(j, "version"));
  const auto& headers = field(j, "headers");
  for (std::size_t i = 0; i < headers.size(); ++i) {
    path_segment s(*this, "headers/" + std::to_string(i));
    reset();
    const auto& h = headers[i];
    p.headers.push_back({str(h, "name"), h.value("must_understand", false), length(h), {}});
    path_segment v(*this, "value");
    p.headers.back().val = parse(field(h, "value"), false);
  }
  const auto& bodies = field(j, "bodies");
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    path_segment s(*this, "bodies/" + std::to_string(i));
    reset();
    const auto& b = bodies[i];
    amf::body out{str(b, "target"), str(b, "response"), length(b), {}};
    path_segment v(*this, "value");
    out.val = parse(field(b, "value"), false, out.is_request());
    p.bodies.push_back(out);
  }
  return p;
}

value reader::parse(const ordered_json& j, bool amf3, bool arguments) {
  switch (j.type()) {
    case ordered_json::value_t::null:
      return value::null();
    case ordered_json::value_t::boolean:
      return value::boolean(j.get<bool>());
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
    case ordered_json::value_t::number_float:
      return value::number(j.get<double>());
    case ordered_json::value_t::string:
      return doc_.string(j.get_ref<const std::string&>());
    case ordered_json::value_t::array: {
      array_node* a = doc_.array(j.size());
      if (amf3 || !arguments) (amf3 ? amf3_ : amf0_).push_back(a);
      for (std::size_t i = 0; i < j.size(); ++i) {
        path_segment s(*this, std::to_string(i));
        a->dense.push_back(parse(j[i], amf3));
      }
      return value::of(a);
    }
    case ordered_json::value_t::object: {
      if (!j.empty()) {
        const std::string& key = j.begin().key();
        if (key.starts_with('$') && !key.starts_with("$$")) return special(j, key, amf3);
      }
      object_node* o = doc_.object();
      (amf3 ? amf3_ : amf0_).push_back(o);
      for (const auto& [k, v] : j.items()) {
        path_segment s(*this, k);
        o->dynamic.push_back({doc_.copy(unescape(k)), parse(v, amf3)});
      }
      return value::of(o);
    }
    default:
      fail("not a typed JSON value");
  }
}

value reader::special(const ordered_json& j, const std::string& key, bool amf3) {
  const ordered_json& x = j[key];
  auto& table = amf3 ? amf3_ : amf0_;
  auto as_double = [&](const ordered_json& n) -> double {
    if (n.is_number()) return n.get<double>();
    if (n.is_object() && n.contains("$double")) {
      const std::string s = n["$double"].get<std::string>();
      if (n.contains("$bits")) {
        return std::bit_cast<double>(
            static_cast<std::uint64_t>(std::stoull(n["$bits"].get<std::string>(), nullptr, 16)));
      }
      if (s == "NaN") return std::nan("");
      if (s == "Infinity") return HUGE_VAL;
      if (s == "-Infinity") return -HUGE_VAL;
      if (s == "-0.0") return -0.0;
    }
    fail("expected a number");
  };
  auto string_of = [&](const ordered_json& s) -> std::string {
    if (s.is_string()) return s.get<std::string>();
    if (s.is_object() && s.contains("$badutf8")) return from_hex(s["$badutf8"].get<std::string>());
    fail("expected a string");
  };
  path_segment seg(*this, key);
  if (key == "$ref") {
    auto n = integer<std::size_t>(x);
    if (n >= table.size()) fail("reference " + std::to_string(n) + " beyond the table");
    return value::of(table[n]);
  }
  if (key == "$undefined") return value::undefined();
  if (key == "$unsupported") return value::unsupported();
  if (key == "$int") return value::integer(integer<std::int32_t>(x));
  if (key == "$double") return value::number(as_double(j));
  if (key == "$badutf8") return doc_.string(string_of(j));
  if (key == "$longstring") return doc_.string(string_of(x)).with_flags(value::long_string);
  if (key == "$amf3") return parse(x, true).with_flags(value::avmplus);
  if (key == "$date") {
    auto* d = doc_.create<date_node>(
        as_double(x), j.contains("$tz") ? integer<std::int16_t>(j["$tz"]) : std::int16_t{0});
    table.push_back(d);
    return value::of(d);
  }
  if (key == "$xml" || key == "$xmldoc") {
    auto* n = doc_.xml(key == "$xml" ? type::xml : type::xml_document, string_of(x));
    if (amf3) table.push_back(n);
    return value::of(n);
  }
  if (key == "$bytes") {
    auto* n = doc_.bytes(bytes_of(from_hex(x.get<std::string>())));
    table.push_back(n);
    return value::of(n);
  }
  if (key == "$assoc" || key == "$ecma") {
    auto* a =
        doc_.create<array_node>(key == "$ecma" ? type::ecma_array : type::array, doc_.resource());
    table.push_back(a);
    if (key == "$ecma" && j.contains("$count"))
      a->ecma_count = integer<std::uint32_t>(j.at("$count"));
    for (const auto& [k, v] : x.items()) {
      path_segment s(*this, k);
      a->assoc.push_back({doc_.copy(unescape(k)), parse(v, amf3)});
    }
    if (j.contains("$dense")) {
      for (const auto& v : j["$dense"]) a->dense.push_back(parse(v, amf3));
    }
    return value::of(a);
  }
  if (key == "$vector") {
    const std::string kind = x.get<std::string>();
    const type t = kind == "int"      ? type::vector_int
                   : kind == "uint"   ? type::vector_uint
                   : kind == "double" ? type::vector_double
                   : kind == "object" ? type::vector_object
                                      : (fail("unknown vector kind " + kind), type::null);
    auto* v = doc_.vector(t);
    table.push_back(v);
    v->fixed = j.value("$fixed", false);
    if (t == type::vector_object) v->type_name = doc_.copy(string_of(j.value("$type", "")));
    for (const auto& item : j.at("$items")) {
      switch (t) {
        case type::vector_int:
          v->ints.push_back(integer<std::int32_t>(item));
          break;
        case type::vector_uint:
          v->uints.push_back(integer<std::uint32_t>(item));
          break;
        case type::vector_double:
          v->doubles.push_back(as_double(item));
          break;
        default:
          v->objects.push_back(parse(item, true));
          break;
      }
    }
    return value::of(v);
  }
  if (key == "$dictionary") {
    auto* d = doc_.dictionary();
    table.push_back(d);
    d->weak_keys = j.value("$weak", false);
    for (const auto& pair : x) {
      if (!pair.is_array() || pair.size() != 2) fail("dictionary entries are [key, value]");
      value k = parse(pair[0], true);
      d->entries.push_back({k, parse(pair[1], true)});
    }
    return value::of(d);
  }
  if (key == "$class") return object(j, amf3);
  fail("unknown typed JSON key " + key);
}

value reader::object(const ordered_json& j, bool amf3) {
  auto* t = doc_.create<traits>(doc_.resource());
  const auto& alias = j["$class"];
  t->alias = doc_.copy(alias.is_string() ? alias.get<std::string>()
                                         : from_hex(alias.value("$badutf8", "")));
  auto& table = amf3 ? amf3_ : amf0_;
  if (j.value("$externalizable", false)) {
    t->externalizable = true;
    t->dynamic = j.value("$dynamic", false);
    return external(j, t);
  }
  const bool typed_amf0 = !j.contains("$sealed");
  t->dynamic = typed_amf0 || j.value("$dynamic", false);
  std::unordered_set<std::string> sealed_keys;
  if (!typed_amf0) {
    for (const auto& n : j["$sealed"]) {
      t->sealed.push_back(doc_.copy(n.get<std::string>()));
      sealed_keys.insert(escape(t->sealed.back()));
    }
  }
  object_node* o = doc_.object(t);
  table.push_back(o);
  for (std::size_t i = 0; i < t->sealed.size(); ++i) {
    const std::string k = escape(t->sealed[i]);
    path_segment s(*this, k);
    if (!j.contains(k)) fail("sealed member missing");
    o->sealed[i] = parse(j[k], amf3);
  }
  if (j.contains("$dynamic_members")) {
    for (const auto& m : j["$dynamic_members"]) {
      const std::string name = m.at(0).is_string() ? m.at(0).get<std::string>()
                                                   : from_hex(m.at(0).value("$badutf8", ""));
      o->dynamic.push_back({doc_.copy(name), parse(m.at(1), amf3)});
    }
    return value::of(o);
  }
  for (const auto& [k, v] : j.items()) {
    if (k == "$class" || k == "$sealed" || k == "$dynamic" || sealed_keys.count(k)) continue;
    path_segment s(*this, k);
    o->dynamic.push_back({doc_.copy(unescape(k)), parse(v, amf3)});
  }
  return value::of(o);
}

value reader::external(const ordered_json& j, traits* t) {
  auto* e = doc_.external(t);
  amf3_.push_back(e);
  path_segment seg(*this, "$external");
  if (!j.contains("$external")) fail("missing");
  const ordered_json& x = j["$external"];
  const char third = small_message_kind(t->alias);
  if (x.is_object() && x.contains("$ops")) {
    e->layout = external_node::form::ops;
    for (const auto& o : x["$ops"]) {
      const std::string name = o.at(0).get<std::string>();
      external_op op{};
      std::size_t k = 0;
      while (k < std::size(op_names) && op_names[k] != name) ++k;
      if (k == std::size(op_names)) fail("unknown op " + name);
      op.kind = static_cast<external_op::kind_t>(k);
      std::size_t arg = 1;
      if (op.kind == external_op::utf_bytes || op.kind == external_op::multi_byte) {
        op.length = integer<std::uint32_t>(o.at(arg++));
      }
      if (op.kind == external_op::multi_byte)
        op.charset = doc_.copy(o.at(arg++).get<std::string>());
      const auto& v = o.at(arg);
      switch (op.kind) {
        case external_op::boolean:
          op.val = value::boolean(v.get<bool>());
          break;
        case external_op::unsigned_int:
          op.val = value::number(integer<std::uint32_t>(v));
          break;
        case external_op::float_:
        case external_op::double_:
          op.val = parse(v, true);
          break;
        case external_op::utf:
        case external_op::utf_bytes:
        case external_op::multi_byte:
          op.val = doc_.string(v.get<std::string>());
          break;
        case external_op::object:
          op.val = parse(v, true);
          break;
        default:
          op.val = value::integer(integer<std::int32_t>(v));
          break;
      }
      e->ops.push_back(op);
    }
  } else if (x.is_object() && x.contains("$external_bytes")) {
    e->layout = external_node::form::raw;
    e->raw = doc_.copy(bytes_of(from_hex(x["$external_bytes"].get<std::string>())));
  } else if (third != '?') {
    e->layout = external_node::form::small_message;
    object_node* f = doc_.object();
    e->payload = value::of(f);
    for (const auto& [k, v] : x.items()) {
      if (k == "$flags") continue;
      path_segment s(*this, k);
      f->dynamic.push_back({doc_.copy(unescape(k)), parse(v, true)});
    }
    if (x.contains("$flags")) {
      for (int level = 0; level < 3; ++level) {
        const char* name = level_name(level, third);
        if (!x["$flags"].contains(name)) continue;
        for (const auto& b : x["$flags"][name]) e->flags[level].push_back(integer<std::uint8_t>(b));
      }
    }
  } else {
    e->layout = external_node::form::single;
    e->payload = parse(x, true);
  }
  return value::of(e);
}

}  // namespace amf::json
