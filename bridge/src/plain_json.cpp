#include "amfgate/bridge/plain_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "amf/base64.hpp"
#include "amf/civil_date.hpp"

namespace amfgate::bridge {

namespace {

// A refusal at `path` (the keys and indices from the root): "/a/1: why".
[[noreturn]] void fail_at(const std::vector<std::string>& path, const std::string& why) {
  std::string where;
  for (const auto& p : path) where += "/" + p;
  throw mapping_error((where.empty() ? "/" : where) + ": " + why);
}

std::string key_text(const amf::value& k) {
  switch (k.kind()) {
    case amf::type::string:
      return std::string(k.as_string());
    case amf::type::integer:
      return std::to_string(k.as_int());
    case amf::type::number: {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, k.as_double());
      return std::string(buf, r.ptr);
    }
    case amf::type::boolean:
      return k.as_bool() ? "true" : "false";
    default:
      return "[" + std::string(amf::type_name(k.kind())) + "]";
  }
}

class to_json {
 public:
  to_json(const mapping_limits& l, std::size_t& used) : limits_(l), used_(used) {}

  ordered_json render(const amf::value& v) {
    charge(8);
    switch (v.kind()) {
      case amf::type::undefined:
      case amf::type::null:
      case amf::type::unsupported:
        return nullptr;
      case amf::type::boolean:
        return v.as_bool();
      case amf::type::integer:
        return v.as_int();
      case amf::type::number:
        return number(v.as_double());
      case amf::type::string:
        charge(v.as_string().size());
        return std::string(v.as_string());
      case amf::type::date:
        return iso8601(v.as_date()->millis);
      case amf::type::xml:
      case amf::type::xml_document:
        charge(v.as_xml()->text.size());
        return std::string(v.as_xml()->text);
      case amf::type::byte_array: {
        const auto b = v.as_bytes()->bytes;
        charge(b.size() * 4 / 3);
        return ordered_json{
            {"_bytes", amf::base64_encode({reinterpret_cast<const char*>(b.data()), b.size()})}};
      }
      default:
        return container(v);
    }
  }

 private:
  static ordered_json number(double d) {
    if (!std::isfinite(d)) return nullptr;
    // AMF0 sends every number as a double: 7 must reach the backend as 7, not 7.0.
    if (d == std::trunc(d) && std::fabs(d) <= 9007199254740992.0) {
      return static_cast<std::int64_t>(d);
    }
    return d;
  }

  // The values that hold others: nesting and cycles are checked here.
  ordered_json container(const amf::value& v) {
    const amf::node* n = v.as_node();
    if (stack_.size() >= limits_.max_depth)
      fail("nested deeper than " + std::to_string(limits_.max_depth));
    for (const auto* open : stack_) {
      if (open == n) fail("a cycle: an object holds itself");
    }
    stack_.push_back(n);
    ordered_json j = members(v);
    stack_.pop_back();
    return j;
  }

  ordered_json members(const amf::value& v) {
    if (const auto list = amf::as_list(v)) {
      ordered_json a = ordered_json::array();
      for (std::size_t i = 0; i < list->size(); ++i) a.push_back(at(std::to_string(i), (*list)[i]));
      return a;
    }
    if (auto* arr = v.as_array()) {  // an associative array
      ordered_json o = ordered_json::object();
      for (std::size_t i = 0; i < arr->dense.size(); ++i) {
        o[std::to_string(i)] = at(std::to_string(i), arr->dense[i]);
      }
      for (const auto& m : arr->assoc) o[std::string(m.name)] = at(m.name, m.val);
      return o;
    }
    if (auto* obj = v.as_object()) {
      ordered_json o = ordered_json::object();
      if (!obj->cls->alias.empty()) o["_explicitType"] = std::string(obj->cls->alias);
      for (std::size_t i = 0; i < obj->sealed.size() && i < obj->cls->sealed.size(); ++i) {
        o[std::string(obj->cls->sealed[i])] = at(obj->cls->sealed[i], obj->sealed[i]);
      }
      for (const auto& m : obj->dynamic) o[std::string(m.name)] = at(m.name, m.val);
      return o;
    }
    if (auto* vec = v.as_vector()) {
      ordered_json a = ordered_json::array();
      for (auto i : vec->ints) a.push_back(i);
      for (auto u : vec->uints) a.push_back(u);
      for (auto d : vec->doubles) a.push_back(number(d));
      for (std::size_t i = 0; i < vec->objects.size(); ++i) {
        a.push_back(at(std::to_string(i), vec->objects[i]));
      }
      charge(a.size() * 8);
      return a;
    }
    if (auto* dict = v.as_dictionary()) {
      ordered_json o = ordered_json::object();
      for (const auto& e : dict->entries) {
        const auto key = key_text(e.key);
        o[key] = at(key, e.val);
      }
      return o;
    }
    if (auto* ext = v.as_external(); ext && ext->layout == amf::external_node::form::single) {
      return render(ext->payload);  // ArrayCollection and ArrayList: their source; ObjectProxy
    }
    const auto* ext = v.as_external();
    fail("an externalizable " + std::string(ext ? ext->cls->alias : "value") +
         " has no plain JSON form (use the upstream's \"mapping\": \"typed\")");
  }

  ordered_json at(std::string_view key, const amf::value& v) {
    path_.emplace_back(key);
    ordered_json j = render(v);
    path_.pop_back();
    return j;
  }

  void charge(std::size_t n) {
    used_ += n;
    if (used_ > limits_.max_bytes) {
      fail("larger than " + std::to_string(limits_.max_bytes) + " bytes of JSON");
    }
  }

  [[noreturn]] void fail(const std::string& why) const { fail_at(path_, why); }

  const mapping_limits& limits_;
  std::vector<const amf::node*> stack_;
  std::vector<std::string> path_;
  std::size_t& used_;  ///< the writer's, across its renderings
};

class from_json {
 public:
  from_json(amf::document& doc, const mapping_limits& l) : doc_(doc), limits_(l) {}

  amf::value build(const ordered_json& j, std::size_t depth) {
    if (depth > limits_.max_depth) fail("nested deeper than " + std::to_string(limits_.max_depth));
    switch (j.type()) {
      case ordered_json::value_t::null:
      case ordered_json::value_t::discarded:
        return amf::value::null();
      case ordered_json::value_t::boolean:
        return amf::value::boolean(j.get<bool>());
      case ordered_json::value_t::number_integer:
      case ordered_json::value_t::number_unsigned: {
        // AMF3's integer holds 29 bits; wider integers go as Numbers.
        const bool small = j.is_number_unsigned() ? j.get<std::uint64_t>() < (1u << 28)
                                                  : j.get<std::int64_t>() >= -(1 << 28) &&
                                                        j.get<std::int64_t>() < (1 << 28);
        if (small) return amf::value::integer(static_cast<std::int32_t>(j.get<std::int64_t>()));
        return amf::value::number(j.get<double>());
      }
      case ordered_json::value_t::number_float:
        return amf::value::number(j.get<double>());
      case ordered_json::value_t::string:
        return doc_.string(j.get_ref<const std::string&>());
      case ordered_json::value_t::binary:
        fail("binary JSON has no AMF form");
      case ordered_json::value_t::array: {
        amf::array_node* a = doc_.array(j.size());
        for (std::size_t i = 0; i < j.size(); ++i) {
          path_.push_back(std::to_string(i));
          a->dense.push_back(build(j[i], depth + 1));
          path_.pop_back();
        }
        return amf::value::of(a);
      }
      case ordered_json::value_t::object:
        return object(j, depth);
    }
    fail("not a JSON value");
  }

 private:
  amf::value object(const ordered_json& j, std::size_t depth) {
    // AMF3 ends an object's dynamic members at an empty name: such a member would be lost.
    if (j.contains("")) fail("a member with an empty name has no AMF form");
    if (j.size() == 1 && j.contains("_bytes")) {
      const auto& b = j["_bytes"];
      const auto bytes = b.is_string() ? amf::base64_decode(b.get<std::string>()) : std::nullopt;
      if (!bytes) fail("_bytes: expected a base64 string");
      return amf::value::of(
          doc_.bytes({reinterpret_cast<const std::byte*>(bytes->data()), bytes->size()}));
    }
    if (j.size() == 1 && j.contains("_date")) {
      const auto& d = j["_date"];
      std::optional<double> ms;
      if (d.is_number()) ms = d.get<double>();
      if (d.is_string()) ms = parse_iso8601(d.get<std::string>());
      if (!ms) fail("_date: expected an ISO 8601 date (2026-12-06T17:43:54.123Z) or milliseconds");
      return doc_.date(*ms);
    }
    const auto type = j.find("_explicitType");
    if (type != j.end() && !(type->is_string() && !type->get_ref<const std::string&>().empty())) {
      fail("_explicitType: expected a class alias");
    }
    amf::object_node* o;
    if (type != j.end()) {
      // A typed object's members are its sealed traits, in the order the backend wrote them:
      // what BlazeDS writes of a Java bean, and what [RemoteClass] reads.
      auto* t = doc_.create<amf::traits>(doc_.resource());
      t->alias = doc_.copy(type->get_ref<const std::string&>());
      for (const auto& [k, v] : j.items()) {
        if (k != "_explicitType") t->sealed.push_back(doc_.copy(k));
      }
      o = doc_.object(t);  // its sealed values, undefined until set here
      std::size_t i = 0;
      for (const auto& [k, v] : j.items()) {
        if (k == "_explicitType") continue;
        path_.push_back(k);
        o->sealed[i++] = build(v, depth + 1);
        path_.pop_back();
      }
      return amf::value::of(o);
    }
    o = doc_.object();
    for (const auto& [k, v] : j.items()) {
      path_.push_back(k);
      o->dynamic.push_back({doc_.copy(k), build(v, depth + 1)});
      path_.pop_back();
    }
    return amf::value::of(o);
  }

  [[noreturn]] void fail(const std::string& why) const { fail_at(path_, why); }

  amf::document& doc_;
  const mapping_limits& limits_;
  std::vector<std::string> path_;
};

}  // namespace

std::string iso8601(double millis) {
  // ECMAScript's dates: 100,000,000 days either side of 1970. Past them, no date (Flash's
  // Date is invalid there too).
  if (!(std::fabs(millis) <= 8.64e15)) return "";
  const auto ms = static_cast<std::int64_t>(std::floor(millis));
  std::int64_t days = ms / 86'400'000;
  std::int64_t rest = ms % 86'400'000;
  if (rest < 0) {
    rest += 86'400'000;
    --days;
  }
  std::int64_t y;
  unsigned m, d;
  amf::civil_from_days(days, y, m, d);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02d.%03dZ", static_cast<long long>(y),
                m, d, static_cast<int>(rest / 3'600'000), static_cast<int>(rest / 60'000 % 60),
                static_cast<int>(rest / 1000 % 60), static_cast<int>(rest % 1000));
  return buf;
}

std::optional<double> parse_iso8601(std::string_view s) {
  auto num = [&](std::size_t at, std::size_t len, int& out) {
    if (at + len > s.size()) return false;
    const auto r = std::from_chars(s.data() + at, s.data() + at + len, out);
    return r.ec == std::errc() && r.ptr == s.data() + at + len;
  };
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!num(0, 4, y) || s.size() < 10 || s[4] != '-' || !num(5, 2, mo) || s[7] != '-' ||
      !num(8, 2, d) || mo < 1 || mo > 12 || d < 1 || d > 31) {
    return std::nullopt;
  }
  std::size_t at = 10;
  double fraction = 0;
  if (at < s.size() && (s[at] == 'T' || s[at] == ' ')) {
    if (!num(at + 1, 2, h) || s.size() < at + 9 || s[at + 3] != ':' || !num(at + 4, 2, mi) ||
        s[at + 6] != ':' || !num(at + 7, 2, sec) || h > 23 || mi > 59 || sec > 60) {
      return std::nullopt;
    }
    at += 9;
    if (at < s.size() && s[at] == '.') {
      double scale = 100;
      for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, scale /= 10) {
        fraction += (s[at] - '0') * scale;
      }
    }
  }
  int offset_min = 0;
  if (at < s.size()) {
    if (s[at] == 'Z' && at + 1 == s.size()) {
      at = s.size();
    } else if ((s[at] == '+' || s[at] == '-') && s.size() == at + 6 && s[at + 3] == ':') {
      int oh, om;
      if (!num(at + 1, 2, oh) || !num(at + 4, 2, om)) return std::nullopt;
      offset_min = (s[at] == '-' ? -1 : 1) * (oh * 60 + om);
      at = s.size();
    } else {
      return std::nullopt;
    }
  }
  const std::int64_t days =
      amf::days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<double>(days * 86'400'000 + h * 3'600'000LL + mi * 60'000LL + sec * 1000LL -
                             offset_min * 60'000LL) +
         fraction;
}

ordered_json plain_writer::render(const amf::value& v) {
  return to_json(limits_, used_).render(v);
}

ordered_json to_plain(const amf::value& v, const mapping_limits& limits) {
  return plain_writer(limits).render(v);
}

amf::value from_plain(amf::document& doc, const ordered_json& j, const mapping_limits& limits) {
  return from_json(doc, limits).build(j, 0);
}

}  // namespace amfgate::bridge
