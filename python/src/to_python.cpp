// AMF values to Python objects (see convert.hpp).
#include <amf/civil_date.hpp>
#include <amf/externalizable.hpp>
#include <amf/flex.hpp>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "convert.hpp"
#include "pointer_map.hpp"
// After Python.h, which convert.hpp includes through pybind11.
#include <datetime.h>

namespace amfgate::python {

namespace {

// A hash for the string cache, where a collision costs only a miss: the length and the first
// and last eight bytes.
std::size_t quick_hash(std::string_view s) {
  std::uint64_t head = 0, tail = 0;
  if (s.size() >= 8) {  // fixed-size copies, which compile to loads
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else {
    for (char c : s) head = (head << 8) | static_cast<unsigned char>(c);
  }
  std::uint64_t h = (head ^ (tail * 0x9e3779b97f4a7c15ULL) ^ s.size()) * 0xbf58476d1ce4e5b9ULL;
  return static_cast<std::size_t>(h ^ (h >> 31));
}

PyObject* empty_args() {
  static PyObject* const empty = PyTuple_New(0);  // never freed, as Python's own
  return empty;
}

py::object steal(PyObject* o) {
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(o);
}

// A canonical non-negative decimal ("0", "17"; not "01" or "-1"): an array index by name, as an
// AMF0 ECMA array holds its list part.
bool is_index(std::string_view s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

class converter {
 public:
  explicit converter(amf::document& doc) : doc_(doc), st_(state::get()), seen_(doc.resource()) {
    if (PyDateTimeAPI == nullptr) PyDateTime_IMPORT;  // the C API is per translation unit
  }

  py::object convert(const amf::value& v) {
    switch (v.kind()) {
      case amf::type::undefined:
        return st_.undefined;
      case amf::type::null:
      case amf::type::unsupported:
        return py::none();
      case amf::type::boolean:
        return py::bool_(v.as_bool());
      case amf::type::integer:
        return steal(PyLong_FromLong(v.as_int()));
      case amf::type::number:
        return steal(PyFloat_FromDouble(v.as_double()));
      case amf::type::string:
        return name(v.as_string());
      default:
        return node(v);
    }
  }

 private:
  py::object text(std::string_view s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), nullptr);
    if (o == nullptr) {
      PyErr_Clear();
      raise_decode_error("a string is not valid UTF-8", "bad_utf8", -1);
    }
    return py::reinterpret_steal<py::object>(o);
  }

  // Member names and short strings repeat across the objects of a graph (in AMF0 each time in
  // full): they go through a direct-mapped cache of recent strings by content, so that one
  // Python string serves them all. Bounded: a collision replaces the entry.
  py::object name(std::string_view s) {
    if (s.size() > 64) return text(s);
    auto& [seen, str] = names_[quick_hash(s) & (names_.size() - 1)];
    // AMF3's references give the same characters: equal without comparing them.
    if (!str || (seen.data() != s.data() && seen != s) || seen.size() != s.size()) {
      str = text(s);
      seen = s;
    }
    return str;
  }

  // Only a node the input refers to again can be met twice (a small Flex message's expansion
  // is remembered under the message).
  py::object remember(const amf::node* n, py::object o) {
    if (n->referenced) seen_[n] = o;
    return o;
  }

  py::object node(const amf::value& v) {
    const amf::node* n = v.as_node();
    if (n->referenced)
      if (py::object* known = seen_.find(n)) return *known;
    switch (v.kind()) {
      case amf::type::date:
        return remember(n, date(v.as_date()->millis));
      case amf::type::object:
        return object(*v.as_object());
      case amf::type::array:
      case amf::type::ecma_array:
        return array(*v.as_array());
      case amf::type::byte_array: {
        auto b = v.as_bytes()->bytes;
        return remember(n, steal(PyBytes_FromStringAndSize(reinterpret_cast<const char*>(b.data()),
                                                           static_cast<Py_ssize_t>(b.size()))));
      }
      case amf::type::xml:
        return remember(n, st_.xml(text(v.as_xml()->text)));
      case amf::type::xml_document:
        return remember(n, st_.xml_document(text(v.as_xml()->text)));
      case amf::type::vector_int:
      case amf::type::vector_uint:
      case amf::type::vector_double:
      case amf::type::vector_object:
        return vector(*v.as_vector());
      case amf::type::dictionary:
        return dictionary(*v.as_dictionary());
      case amf::type::externalizable:
        return external(*v.as_external());
      default:
        raise_decode_error("a value of an unknown kind", "unknown_marker", -1);
    }
  }

  py::object date(double ms) {
    // datetime holds years 1 to 9999.
    constexpr double lowest = -62135596800000.0, highest = 253402300799999.0;
    if (!std::isfinite(ms) || ms < lowest || ms > highest)
      raise_decode_error("a date outside the years 1 to 9999: " + std::to_string(ms) + " ms",
                         "date_out_of_range", -1);
    const double whole = std::floor(ms);
    auto micros = static_cast<std::int64_t>(std::llround((ms - whole) * 1000.0));
    auto millis = static_cast<std::int64_t>(whole);
    std::int64_t days = millis / 86400000, rest = millis % 86400000;
    if (rest < 0) {
      rest += 86400000;
      --days;
    }
    micros += (rest % 1000) * 1000;
    std::int64_t secs = rest / 1000;
    if (micros >= 1000000) {  // a fraction that rounds up to the next millisecond's first µs
      micros -= 1000000;
      ++secs;
    }
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    amf::civil_from_days(days, y, m, d);
    if (secs >= 86400) {
      // Only at 9999-12-31T23:59:59.999999...: keep to the last representable instant.
      secs = 86399;
      micros = 999999;
    }
    return steal(PyDateTimeAPI->DateTime_FromDateAndTime(
        static_cast<int>(y), static_cast<int>(m), static_cast<int>(d),
        static_cast<int>(secs / 3600), static_cast<int>(secs / 60 % 60),
        static_cast<int>(secs % 60), static_cast<int>(micros), PyDateTime_TimeZone_UTC,
        PyDateTimeAPI->DateTimeType));
  }

  py::object object(const amf::object_node& o) {
    if (o.cls->alias.empty()) {
      py::object d = remember(&o, steal(PyDict_New()));
      fill(d, o);
      return d;
    }
    std::string alias(o.cls->alias);
    if (auto it = st_.by_alias.find(alias); it != st_.by_alias.end()) {
      py::handle cls(reinterpret_cast<PyObject*>(it->second));
      // cls.__new__(cls), without looking it up and calling it from Python.
      auto* type = it->second;
      py::object inst = remember(&o, steal(type->tp_new(type, empty_args(), nullptr)));
      auto set = [&](std::string_view member, const amf::value& val) {
        py::object key = name(member);
        py::object item = convert(val);
        if (PyObject_GenericSetAttr(inst.ptr(), key.ptr(), item.ptr()) != 0) {
          PyErr_Clear();
          raise_decode_error("class " + alias + " (" + py::str(cls).cast<std::string>() +
                                 ") has no member " + std::string(member),
                             "bad_member", -1);
        }
      };
      for (std::size_t i = 0; i < o.sealed.size(); ++i) set(o.cls->sealed[i], o.sealed[i]);
      for (const auto& m : o.dynamic) set(m.name, m.val);
      return inst;
    }
    // TypedObject(alias), without running its __init__ in Python.
    auto* type = reinterpret_cast<PyTypeObject*>(st_.typed_object.ptr());
    py::object d = remember(&o, steal(type->tp_new(type, empty_args(), nullptr)));
    if (PyObject_SetAttrString(d.ptr(), "alias", name(o.cls->alias).ptr()) != 0)
      throw py::error_already_set();
    if (!o.cls->sealed.empty()) {  // the traits it came with, to be written back the same
      py::tuple sealed(o.cls->sealed.size());
      for (std::size_t i = 0; i < o.cls->sealed.size(); ++i) sealed[i] = name(o.cls->sealed[i]);
      d.attr("sealed") = sealed;
    }
    if (!o.cls->dynamic) d.attr("dynamic") = py::bool_(false);
    fill(d, o);
    return d;
  }

  void fill(py::handle d, const amf::object_node& o) {
    for (std::size_t i = 0; i < o.sealed.size(); ++i)
      set_item(d, name(o.cls->sealed[i]), o.sealed[i]);
    for (const auto& m : o.dynamic) set_item(d, name(m.name), m.val);
  }

  void set_item(py::handle d, py::handle key, const amf::value& val) {
    py::object item = convert(val);
    if (PyDict_SetItem(d.ptr(), key.ptr(), item.ptr()) != 0) throw py::error_already_set();
  }

  py::object array(const amf::array_node& a) {
    if (a.kind == amf::type::array && a.assoc.empty()) {
      py::object list = remember(&a, steal(PyList_New(static_cast<Py_ssize_t>(a.dense.size()))));
      for (std::size_t i = 0; i < a.dense.size(); ++i)
        PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i),
                        convert(a.dense[i]).release().ptr());
      return list;
    }
    // A mixed array: the dense part under int keys, the associative part under its names;
    // names that are indexes ("0", "17") as ints, as ActionScript and Py3AMF take them.
    py::object d = remember(&a, st_.mixed_array());
    for (std::size_t i = 0; i < a.dense.size(); ++i)
      set_item(d, steal(PyLong_FromSize_t(i)), a.dense[i]);
    for (const auto& m : a.assoc) {
      if (is_index(m.name))
        set_item(d, steal(PyLong_FromString(std::string(m.name).c_str(), nullptr, 10)), m.val);
      else
        set_item(d, name(m.name), m.val);
    }
    return d;
  }

  py::object vector(const amf::vector_node& v) {
    auto raw = [&](const char* code, const void* data, std::size_t bytes) {
      return remember(&v, st_.array_array(code, py::bytes(static_cast<const char*>(data), bytes)));
    };
    switch (v.kind) {
      case amf::type::vector_int:
        return raw("i", v.ints.data(), v.ints.size() * sizeof(std::int32_t));
      case amf::type::vector_uint:
        return raw("I", v.uints.data(), v.uints.size() * sizeof(std::uint32_t));
      case amf::type::vector_double:
        return raw("d", v.doubles.data(), v.doubles.size() * sizeof(double));
      default: {
        py::object list =
            remember(&v, steal(PyList_New(static_cast<Py_ssize_t>(v.objects.size()))));
        for (std::size_t i = 0; i < v.objects.size(); ++i)
          PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i),
                          convert(v.objects[i]).release().ptr());
        return list;
      }
    }
  }

  // A dict, or a Dictionary of pairs when a key cannot be hashed (an object, an array).
  py::object dictionary(const amf::dictionary_node& d) {
    std::vector<py::object> keys;
    keys.reserve(d.entries.size());
    bool hashable = true;
    py::object out = remember(&d, steal(PyDict_New()));
    for (const auto& e : d.entries) {
      keys.push_back(convert(e.key));
      if (hashable && PyObject_Hash(keys.back().ptr()) == -1) {
        PyErr_Clear();
        hashable = false;
        out = st_.dictionary();
        remember(&d, out);
      }
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      py::object val = convert(d.entries[i].val);
      if (hashable) {
        if (PyDict_SetItem(out.ptr(), keys[i].ptr(), val.ptr()) != 0) throw py::error_already_set();
      } else {
        out.attr("append")(py::make_tuple(keys[i], val));
      }
    }
    return out;
  }

  py::object external(const amf::external_node& e) {
    const std::string_view alias = e.cls->alias;
    if (e.layout == amf::external_node::form::small_message) {
      auto m = amf::flex::read(amf::value::of(const_cast<amf::external_node*>(&e)), doc_);
      if (!m) raise_decode_error("a small Flex message that does not read", "bad_external", -1);
      amf::value full = amf::flex::make(doc_, *m);
      py::object o = convert(full);
      remember(&e, o);
      return o;
    }
    if (e.layout == amf::external_node::form::ops) {
      const auto type = st_.by_alias.find(std::string(alias));
      if (type != st_.by_alias.end()) {
        const state::registered& r = st_.by_type.at(type->second);
        if (r.layout) return read_by_class(e, r.cls);
      }
    }
    if (e.layout != amf::external_node::form::single)
      raise_decode_error("an externalizable " + std::string(alias) + " with no Python form",
                         "unknown_externalizable", -1);
    if (alias == amf::array_collection_alias || alias == amf::array_list_alias) {
      py::object list = remember(
          &e, alias == amf::array_collection_alias ? st_.array_collection() : st_.array_list());
      py::object items = convert(e.payload);
      // Some writers wrap the array in an object of one member, source (Py3AMF reads it so).
      if (PyDict_Check(items.ptr())) {
        PyObject* source = PyDict_GetItemString(items.ptr(), "source");  // borrowed
        if (source != nullptr) items = py::reinterpret_borrow<py::object>(source);
      }
      if (!PyList_Check(items.ptr()))
        raise_decode_error(std::string(alias) + " around something other than an array",
                           "bad_external", -1);
      list.attr("extend")(items);
      return list;
    }
    py::object proxy = remember(&e, st_.object_proxy());
    py::object inner = convert(e.payload);
    if (!PyDict_Check(inner.ptr()))
      raise_decode_error(std::string(alias) + " around something other than an object",
                         "bad_external", -1);
    proxy.attr("update")(inner);
    return proxy;
  }

  // An object of a class registered with its layout: a new instance, whose __readamf__ reads
  // what the codec read, call by call (amfgate._types._Input).
  py::object read_by_class(const amf::external_node& e, const py::object& cls) {
    using op = amf::external_op;
    py::object obj = cls.attr("__new__")(cls);
    seen_[&e] = obj;  // (its payload may refer to it)
    py::list calls;
    for (const auto& o : e.ops) {
      py::object arg;
      switch (o.kind) {
        case op::boolean:
          arg = py::bool_(o.val.as_bool());
          break;
        case op::unsigned_int:  // (held as a double: 32 bits do not fit an AMF integer)
          arg = steal(PyLong_FromUnsignedLong(static_cast<std::uint32_t>(o.val.to_double())));
          break;
        case op::utf:
        case op::utf_bytes:
        case op::multi_byte:
          arg = text(o.val.as_string());
          break;
        default:
          arg = convert(o.val);  // numbers, and readObject's value
      }
      const std::string_view name = call_names[o.kind];
      calls.append(py::make_tuple(py::str(name.data(), name.size()), std::move(arg)));
    }
    const std::string_view alias = e.cls->alias;
    obj.attr("__readamf__")(st_.data_input(py::str(alias.data(), alias.size()), std::move(calls)));
    return obj;
  }

  amf::document& doc_;
  state& st_;
  pointer_map<py::object> seen_;
  std::array<std::pair<std::string_view, py::object>, 1024> names_;
};

}  // namespace

py::object to_python(const amf::value& v, amf::document& doc) {
  return converter(doc).convert(v);
}

}  // namespace amfgate::python
