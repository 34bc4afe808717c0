// Python objects to AMF values (see convert.hpp).
#include <amf/civil_date.hpp>
#include <amf/externalizable.hpp>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "convert.hpp"
// After Python.h, which convert.hpp includes through pybind11.
#include <datetime.h>

namespace amfgate::python {

namespace {

// What an AMF3-only value holds is written in AMF3, in an AMF0 encoding too (behind the
// switch): converted as AMF3 while it lasts.
struct in_amf3 {
  explicit in_amf3(encode_options& opt) : opt_(opt), was_(opt.amf3) { opt.amf3 = true; }
  ~in_amf3() { opt_.amf3 = was_; }
  in_amf3(const in_amf3&) = delete;
  in_amf3& operator=(const in_amf3&) = delete;
  encode_options& opt_;
  bool was_;
};

bool is_instance(py::handle obj, const py::object& type) {
  const int r = PyObject_IsInstance(obj.ptr(), type.ptr());
  if (r < 0) throw py::error_already_set();
  return r == 1;
}

}  // namespace

from_python::from_python(amf::document& doc, const encode_options& opt)
    : doc_(doc), opt_(opt), seen_(doc.resource()), keep_(doc.resource()) {
  if (PyDateTimeAPI == nullptr) PyDateTime_IMPORT;  // the C API is per translation unit
}

amf::value from_python::convert(py::handle obj) {
  PyObject* o = obj.ptr();
  PyTypeObject* t = Py_TYPE(o);
  if (o == Py_None) return amf::value::null();
  if (t == &PyBool_Type) return amf::value::boolean(o == Py_True);
  if (t == &PyFloat_Type) return amf::value::number(PyFloat_AS_DOUBLE(o));
  if (t == &PyUnicode_Type) return amf::value::string(text(obj));
  if (t == &PyLong_Type) return scalar_or_node(obj);  // a value, never in seen_
  if (amf::value* known = seen_.find(o)) return *known;
  if (t == &PyList_Type || t == &PyTuple_Type || t == &PyDict_Type) {  // not a subclass of ours
    if (path_.size() >= opt_.max_depth) too_deep();
    return t == &PyDict_Type ? dict(obj, {}) : sequence(obj);
  }
  return scalar_or_node(obj);
}

amf::value from_python::scalar_or_node(py::handle obj) {
  PyObject* o = obj.ptr();
  const state& st = state::get();
  if (PyLong_Check(o)) {
    // An int goes as an AMF3 integer if it fits one, else as a double if one holds it exactly.
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    constexpr long long exact = 1LL << 53;
    if (overflow != 0 || x > exact || x < -exact)
      fail(PyExc_OverflowError, "an int that a double cannot hold exactly (beyond 2**53)");
    if (x >= INT32_MIN && x <= INT32_MAX) return amf::value::integer(static_cast<std::int32_t>(x));
    return amf::value::number(static_cast<double>(x));
  }
  if (o == st.undefined.ptr()) return amf::value::undefined();
  if (PyFloat_Check(o)) return amf::value::number(PyFloat_AsDouble(o));
  if (PyUnicode_Check(o) && !is_instance(obj, st.xml) && !is_instance(obj, st.xml_document))
    return amf::value::string(text(obj));
  if (path_.size() >= opt_.max_depth) too_deep();
  return node_of(obj);
}

amf::value from_python::node_of(py::handle obj) {
  PyObject* o = obj.ptr();
  const state& st = state::get();
  if (auto it = st.by_type.find(Py_TYPE(o)); it != st.by_type.end()) return typed(obj, it->second);
  if (!opt_.encoders.is_none()) {
    PyObject* fn =
        PyDict_GetItemWithError(opt_.encoders.ptr(), reinterpret_cast<PyObject*>(Py_TYPE(o)));
    if (fn != nullptr) return replaced(obj, py::reinterpret_borrow<py::object>(fn));
    if (PyErr_Occurred()) throw py::error_already_set();
  }
  if (PyUnicode_Check(o)) {  // XML or XMLDocument
    const auto kind = is_instance(obj, st.xml) ? amf::type::xml : amf::type::xml_document;
    return remember(o, amf::value::of(doc_.create<amf::xml_node>(kind, text(obj))));
  }
  if (PyBytes_Check(o)) {
    keep_.push_back(py::reinterpret_borrow<py::object>(obj));
    std::span bytes(reinterpret_cast<const std::byte*>(PyBytes_AS_STRING(o)),
                    static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
    return remember(o, amf::value::of(doc_.create<amf::bytes_node>(bytes)));
  }
  if (PyByteArray_Check(o) || PyMemoryView_Check(o)) {  // copied: they can change under us
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS) != 0) throw py::error_already_set();
    std::span bytes(static_cast<const std::byte*>(view.buf), static_cast<std::size_t>(view.len));
    amf::bytes_node* n = doc_.bytes(bytes);
    PyBuffer_Release(&view);
    return remember(o, amf::value::of(n));
  }
  if (PyDate_Check(o)) return remember(o, date(obj));
  if (PyDict_Check(o)) {
    if (is_instance(obj, st.typed_object)) return typed_dict(obj);
    if (is_instance(obj, st.mixed_array)) return mixed(obj);
    if (is_instance(obj, st.object_proxy))
      return external(obj, "flex.messaging.io.ObjectProxy", false);
    return dict(obj, {});
  }
  if (PyList_Check(o) || PyTuple_Check(o)) {
    if (is_instance(obj, st.array_collection))
      return external(obj, amf::array_collection_alias, true);
    if (is_instance(obj, st.array_list)) return external(obj, amf::array_list_alias, true);
    if (is_instance(obj, st.dictionary)) return pairs(obj);
    return sequence(obj);
  }
  if (is_instance(obj, st.array_array)) return vector(obj);
  if (is_instance(obj, st.external)) return recorded(obj);
  if (!opt_.default_fn.is_none()) return replaced(obj, opt_.default_fn);
  fail(PyExc_TypeError, "an object of type " + type_name(obj) +
                            " (register its class with amfgate.register_class, or pass default=)");
}

std::string_view from_python::text(py::handle str) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(str.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    fail(PyExc_ValueError, "a string that UTF-8 cannot hold (a lone surrogate)");
  }
  return {data, static_cast<std::size_t>(size)};
}

py::handle from_python::hold(PyObject* o) {
  keep_.push_back(py::reinterpret_borrow<py::object>(o));
  return o;
}

amf::value from_python::dict(py::handle obj, std::string_view alias) {
  PyObject* key = nullptr;
  PyObject* val = nullptr;
  Py_ssize_t pos = 0;
  bool all_text = true;
  while (PyDict_Next(obj.ptr(), &pos, &key, &val)) all_text = all_text && PyUnicode_Check(key);
  if (!all_text && !alias.empty())
    fail(PyExc_TypeError, "a typed object with a key that is not a string");
  // Keys and values are held while the graph views them: converting a value may run Python
  // code (a registered class's properties) that changes the dict.
  pos = 0;
  std::size_t i = 0;
  if (!all_text) {  // a Dictionary (in AMF0 too, behind the AMF3 switch)
    amf::dictionary_node* d = doc_.dictionary();
    amf::value v = remember(obj.ptr(), amf::value::of(d));
    const in_amf3 amf3(opt_);
    while (PyDict_Next(obj.ptr(), &pos, &key, &val)) {
      py::handle k = hold(key), x = hold(val);
      path_.push_back({i++, {}});
      amf::value kv = convert(k);
      d->entries.push_back({kv, convert(x)});
      path_.pop_back();
    }
    return v;
  }
  const amf::traits* cls = doc_.anonymous_traits();
  if (!alias.empty()) {
    auto& cached = traits_[std::string(alias)];
    if (cached == nullptr) cached = doc_.make_traits(alias, true);
    cls = cached;
  }
  amf::object_node* n = doc_.object(cls);
  amf::value v = remember(obj.ptr(), amf::value::of(n));
  n->dynamic.reserve(static_cast<std::size_t>(PyDict_GET_SIZE(obj.ptr())));
  while (PyDict_Next(obj.ptr(), &pos, &key, &val)) {
    py::handle k = hold(key), x = hold(val);
    path_.push_back({0, k});
    n->dynamic.push_back({member_name(k), convert(x)});
    path_.pop_back();
  }
  return v;
}

std::string_view from_python::member_name(py::handle key) {
  const std::string_view name = text(key);
  if (name.empty() && opt_.amf3)
    fail(PyExc_ValueError, "a member named \"\", which AMF3 cannot hold (it ends the members)");
  return name;
}

amf::value from_python::remember(PyObject* o, amf::value v) {
  seen_[o] = v;
  if (o == standing_in_) seen_[original_] = v;  // what default() returned stands for it
  return v;
}

amf::value from_python::replaced(py::handle obj, const py::object& fn) {
  if (obj.ptr() == standing_in_)
    fail(PyExc_TypeError, "an object of type " + type_name(obj) + " that " +
                              (fn.ptr() == opt_.default_fn.ptr() ? "default()" : "an encoder") +
                              " returned");
  py::object stand_in = fn(obj);
  keep_.push_back(stand_in);
  PyObject* const outer_stand_in = standing_in_;
  PyObject* const outer_original = original_;
  standing_in_ = stand_in.ptr();
  original_ = obj.ptr();
  const amf::value v = convert(stand_in);
  standing_in_ = outer_stand_in;
  original_ = outer_original;
  return remember(obj.ptr(), v);
}

amf::value from_python::typed_dict(py::handle obj) {
  py::object alias = obj.attr("alias");
  if (!PyUnicode_Check(alias.ptr()))
    fail(PyExc_TypeError, "a TypedObject whose alias is not a string");
  const std::string_view name = text(hold(alias.ptr()));
  const bool dynamic = PyObject_IsTrue(obj.attr("dynamic").ptr()) == 1;
  py::object sealed = obj.attr("sealed");
  if (!PyTuple_Check(sealed.ptr()) && !PyList_Check(sealed.ptr()))
    fail(PyExc_TypeError, "a TypedObject whose sealed members are not a tuple or list");
  const py::sequence names = sealed;
  if (names.size() == 0 && dynamic) return dict(obj, name);
  // Traits by alias, names and dynamic flag: objects of one class share them on the wire.
  std::string key(name);
  key += dynamic ? '+' : '-';
  for (auto n : names) {
    if (!PyUnicode_Check(n.ptr()))
      fail(PyExc_TypeError, "a TypedObject's sealed member name that is not a string");
    key += '\0';
    key += text(hold(n.ptr()));
  }
  auto& cls = traits_[key];
  if (cls == nullptr) {
    auto* t = doc_.create<amf::traits>(doc_.resource());
    t->alias = doc_.copy(name);
    t->dynamic = dynamic;
    for (auto n : names) t->sealed.push_back(doc_.copy(text(n)));
    cls = t;
  }
  amf::object_node* o = doc_.object(cls);
  amf::value v = remember(obj.ptr(), amf::value::of(o));
  std::size_t i = 0;
  for (auto n : names) {
    PyObject* item = PyDict_GetItemWithError(obj.ptr(), n.ptr());  // borrowed
    if (item == nullptr && PyErr_Occurred()) throw py::error_already_set();
    path_.push_back({0, n});
    o->sealed[i++] = item == nullptr ? amf::value::undefined() : convert(hold(item));
    path_.pop_back();
  }
  PyObject* key_obj = nullptr;
  PyObject* val = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(obj.ptr(), &pos, &key_obj, &val)) {
    py::handle k = hold(key_obj), x = hold(val);
    if (!PyUnicode_Check(key_obj))
      fail(PyExc_TypeError, "a typed object with a key that is not a string");
    const int is_sealed = PySequence_Contains(names.ptr(), key_obj);
    if (is_sealed < 0) throw py::error_already_set();
    if (is_sealed == 1) continue;
    path_.push_back({0, k});
    if (!dynamic)
      fail(PyExc_TypeError, "a member that is not sealed, in a TypedObject that is not dynamic");
    o->dynamic.push_back({member_name(k), convert(x)});
    path_.pop_back();
  }
  return v;
}

amf::value from_python::pairs(py::handle obj) {
  amf::dictionary_node* d = doc_.dictionary();
  amf::value v = remember(obj.ptr(), amf::value::of(d));
  const in_amf3 amf3(opt_);
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(obj.ptr()); ++i) {
    py::handle pair = hold(PyList_GET_ITEM(obj.ptr(), i));
    path_.push_back({static_cast<std::size_t>(i), {}});
    if (!PyTuple_Check(pair.ptr()) || PyTuple_GET_SIZE(pair.ptr()) != 2)
      fail(PyExc_TypeError, "a Dictionary item that is not a (key, value) pair");
    amf::value key = convert(PyTuple_GET_ITEM(pair.ptr(), 0));
    d->entries.push_back({key, convert(PyTuple_GET_ITEM(pair.ptr(), 1))});
    path_.pop_back();
  }
  return v;
}

amf::value from_python::mixed(py::handle obj) {
  // Int keys 0..n-1 make the dense part (AMF3); the rest go by name, ints as decimal text.
  amf::array_node* a = doc_.create<amf::array_node>(
      opt_.amf3 ? amf::type::array : amf::type::ecma_array, doc_.resource());
  amf::value v = remember(obj.ptr(), amf::value::of(a));
  std::size_t dense = 0;
  if (opt_.amf3)
    while (true) {
      py::object index = py::int_(dense);
      if (PyDict_GetItemWithError(obj.ptr(), index.ptr()) == nullptr) break;
      ++dense;
    }
  if (PyErr_Occurred()) throw py::error_already_set();
  a->dense.resize(dense);
  PyObject* key = nullptr;
  PyObject* val = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(obj.ptr(), &pos, &key, &val)) {
    py::handle k = hold(key), x = hold(val);
    if (PyLong_Check(key)) {
      int overflow = 0;
      const long long index = PyLong_AsLongLongAndOverflow(key, &overflow);
      if (overflow == 0 && index >= 0 && static_cast<std::size_t>(index) < dense) {
        path_.push_back({static_cast<std::size_t>(index), {}});
        a->dense[static_cast<std::size_t>(index)] = convert(x);
        path_.pop_back();
        continue;
      }
      PyObject* name = PyObject_Str(key);
      if (name == nullptr) throw py::error_already_set();
      keep_.push_back(py::reinterpret_steal<py::object>(name));
      k = name;
    } else if (!PyUnicode_Check(key)) {
      fail(PyExc_TypeError, "a MixedArray key that is neither an int nor a string");
    }
    path_.push_back({0, k});
    a->assoc.push_back({member_name(k), convert(x)});
    path_.pop_back();
  }
  a->ecma_count = static_cast<std::uint32_t>(a->assoc.size());
  return v;
}

amf::value from_python::sequence(py::handle obj) {
  PyObject* o = obj.ptr();
  const bool list = PyList_Check(o);
  auto size = [&] { return list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o); };
  amf::array_node* a = doc_.array(static_cast<std::size_t>(size()));
  const amf::value v = amf::value::of(a);
  // A tuple is not remembered (but as a stand-in): Python shares equal tuples (every () is one
  // object), which would come back as one shared list. It can hold itself only through a list.
  if (list || o == standing_in_) remember(o, v);
  for (Py_ssize_t i = 0; i < size(); ++i) {  // a list can change while its items convert
    py::handle item = hold(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i));
    path_.push_back({static_cast<std::size_t>(i), {}});
    a->dense.push_back(convert(item));
    path_.pop_back();
  }
  return v;
}

amf::value from_python::vector(py::handle obj) {
  const std::string code = py::str(obj.attr("typecode"));
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0)
    throw py::error_already_set();
  struct release {
    Py_buffer* b;
    ~release() { PyBuffer_Release(b); }
  } guard{&view};
  const std::size_t n = static_cast<std::size_t>(view.len / view.itemsize);
  const char c = code.empty() ? '?' : code[0];
  auto each = [&](auto&& put) {
    for (std::size_t i = 0; i < n; ++i) {
      const char* p =
          static_cast<const char*>(view.buf) + i * static_cast<std::size_t>(view.itemsize);
      switch (c) {
        case 'b':
          put(static_cast<double>(*reinterpret_cast<const signed char*>(p)), i);
          break;
        case 'B':
          put(static_cast<double>(*reinterpret_cast<const unsigned char*>(p)), i);
          break;
        case 'h':
          put(static_cast<double>(*reinterpret_cast<const short*>(p)), i);
          break;
        case 'H':
          put(static_cast<double>(*reinterpret_cast<const unsigned short*>(p)), i);
          break;
        case 'i':
          put(static_cast<double>(*reinterpret_cast<const int*>(p)), i);
          break;
        case 'I':
          put(static_cast<double>(*reinterpret_cast<const unsigned*>(p)), i);
          break;
        case 'l':
          put(static_cast<double>(*reinterpret_cast<const long*>(p)), i);
          break;
        case 'L':
          put(static_cast<double>(*reinterpret_cast<const unsigned long*>(p)), i);
          break;
        case 'q':
          put(static_cast<double>(*reinterpret_cast<const long long*>(p)), i);
          break;
        case 'Q':
          put(static_cast<double>(*reinterpret_cast<const unsigned long long*>(p)), i);
          break;
        case 'f':
          put(static_cast<double>(*reinterpret_cast<const float*>(p)), i);
          break;
        case 'd':
          put(*reinterpret_cast<const double*>(p), i);
          break;
        default:
          fail(PyExc_TypeError,
               "an array.array of typecode '" + code + "' (AMF has int, uint and double vectors)");
      }
    }
  };
  const bool floating = c == 'f' || c == 'd';
  const bool is_unsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q';
  amf::vector_node* out = doc_.vector(floating      ? amf::type::vector_double
                                      : is_unsigned ? amf::type::vector_uint
                                                    : amf::type::vector_int);
  amf::value v = remember(obj.ptr(), amf::value::of(out));
  each([&](double x, std::size_t i) {
    path_.push_back({i, {}});
    if (floating) {
      out->doubles.push_back(x);
    } else if (is_unsigned) {
      if (x > UINT32_MAX) fail(PyExc_OverflowError, "an item too large for a Vector.<uint>");
      out->uints.push_back(static_cast<std::uint32_t>(x));
    } else {
      if (x < INT32_MIN || x > INT32_MAX)
        fail(PyExc_OverflowError, "an item outside a Vector.<int>'s range");
      out->ints.push_back(static_cast<std::int32_t>(x));
    }
    path_.pop_back();
  });
  return v;
}

amf::value from_python::typed(py::handle obj, const state::registered& r) {
  if (r.layout) {  // it writes itself: its IDataOutput calls, recorded
    const py::handle out = keep_.emplace_back(state::get().external(r.alias));
    obj.attr("__writeamf__")(out);
    return recorded(out, obj);
  }
  auto& cls = traits_[r.alias];
  if (cls == nullptr) {
    auto* t = doc_.create<amf::traits>(doc_.resource());
    t->alias = doc_.copy(r.alias);
    t->dynamic = r.dynamic;
    for (const auto& name : r.sealed) t->sealed.push_back(doc_.copy(name));
    cls = t;
  }
  amf::object_node* n = doc_.object(cls);
  amf::value v = remember(obj.ptr(), amf::value::of(n));
  for (std::size_t i = 0; i < r.names.size(); ++i) {
    PyObject* member = PyObject_GetAttr(obj.ptr(), r.names[i].ptr());
    if (member == nullptr) {
      PyErr_Clear();
      fail(PyExc_TypeError, "an instance of " + r.alias + " without its member " + r.sealed[i]);
    }
    keep_.push_back(py::reinterpret_steal<py::object>(member));
    path_.push_back({0, r.names[i]});
    n->sealed[i] = convert(member);
    path_.pop_back();
  }
  if (!r.dynamic) return v;
  PyObject* dict = PyObject_GenericGetDict(obj.ptr(), nullptr);
  if (dict == nullptr) {  // a class without __dict__
    PyErr_Clear();
    return v;
  }
  keep_.push_back(py::reinterpret_steal<py::object>(dict));
  py::handle members = dict;
  PyObject* key = nullptr;
  PyObject* val = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(members.ptr(), &pos, &key, &val)) {
    if (!PyUnicode_Check(key)) continue;
    const std::string_view name = text(key);
    if (name.empty() || name[0] == '_') continue;
    bool sealed = false;
    for (std::string_view s : cls->sealed) sealed = sealed || s == name;
    if (sealed) continue;
    py::handle k = hold(key), x = hold(val);
    path_.push_back({0, k});
    n->dynamic.push_back({name, convert(x)});
    path_.pop_back();
  }
  return v;
}

amf::value from_python::date(py::handle obj) {
  PyObject* o = obj.ptr();
  double ms = static_cast<double>(amf::days_from_civil(
                  PyDateTime_GET_YEAR(o), static_cast<unsigned>(PyDateTime_GET_MONTH(o)),
                  static_cast<unsigned>(PyDateTime_GET_DAY(o)))) *
              86400000.0;
  if (PyDateTime_Check(o)) {
    ms += PyDateTime_DATE_GET_HOUR(o) * 3600000.0 + PyDateTime_DATE_GET_MINUTE(o) * 60000.0 +
          PyDateTime_DATE_GET_SECOND(o) * 1000.0 + PyDateTime_DATE_GET_MICROSECOND(o) / 1000.0;
    // Naive datetimes are taken as UTC; aware ones are moved to it.
    PyObject* zone = PyDateTime_DATE_GET_TZINFO(o);
    if (zone != Py_None && zone != PyDateTime_TimeZone_UTC) {
      py::object offset = obj.attr("utcoffset")();
      if (!offset.is_none()) {
        ms -= PyDateTime_DELTA_GET_DAYS(offset.ptr()) * 86400000.0 +
              PyDateTime_DELTA_GET_SECONDS(offset.ptr()) * 1000.0 +
              PyDateTime_DELTA_GET_MICROSECONDS(offset.ptr()) / 1000.0;
      }
    }
  }
  return amf::value::of(doc_.create<amf::date_node>(ms - opt_.date_shift_ms, std::int16_t{0}));
}

const amf::traits* from_python::external_traits(std::string_view alias) {
  auto& cls = traits_[std::string(alias)];
  if (cls == nullptr) {
    amf::traits* t = doc_.make_traits(alias, false);
    t->externalizable = true;
    cls = t;
  }
  return cls;
}

amf::value from_python::external(py::handle obj, std::string_view alias, bool list) {
  amf::external_node* e = doc_.external(external_traits(alias));
  amf::value v = remember(obj.ptr(), amf::value::of(e));
  e->layout = amf::external_node::form::single;
  // The payload is built from a plain copy, so that it is not taken for the wrapper itself.
  py::object plain = list
                         ? py::object(py::reinterpret_steal<py::object>(PySequence_List(obj.ptr())))
                         : py::object(py::reinterpret_steal<py::object>(PyDict_Copy(obj.ptr())));
  if (!plain) throw py::error_already_set();
  keep_.push_back(plain);
  const in_amf3 amf3(opt_);
  e->payload = list ? sequence(plain) : dict(plain, {});
  return v;
}

// An amfgate.External: its IDataOutput calls, written in order. `written_by`: the object of a
// registered class whose __writeamf__ made it, which stands for it.
amf::value from_python::recorded(py::handle obj, py::handle written_by) {
  using op = amf::external_op;
  const py::handle alias = keep_.emplace_back(obj.attr("alias"));
  if (!PyUnicode_Check(alias.ptr())) fail(PyExc_TypeError, "an External whose alias is not a str");
  amf::external_node* e = doc_.external(external_traits(text(alias)));
  const amf::value v = remember(obj.ptr(), amf::value::of(e));
  if (written_by) remember(written_by.ptr(), v);  // (its calls may write it again)
  e->layout = amf::external_node::form::ops;
  const in_amf3 amf3(opt_);
  const py::handle calls = keep_.emplace_back(obj.attr("ops"));
  if (!PyList_Check(calls.ptr())) fail(PyExc_TypeError, "an External whose ops are not a list");
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(calls.ptr()); ++i) {
    const py::handle call = hold(PyList_GET_ITEM(calls.ptr(), i));
    path_.push_back({static_cast<std::size_t>(i), {}});
    const Py_ssize_t n = PyTuple_Check(call.ptr()) ? PyTuple_GET_SIZE(call.ptr()) : 0;
    const std::string_view name = n >= 2 && PyUnicode_Check(PyTuple_GET_ITEM(call.ptr(), 0))
                                      ? text(PyTuple_GET_ITEM(call.ptr(), 0))
                                      : std::string_view();
    // (writeBytes's bytes go as they are, as writeUTFBytes's text does.)
    const auto kind = name == "bytes" ? op::utf_bytes : call_kind(name);
    if (!kind) fail(PyExc_TypeError, "an External call that is not (kind, value)");
    const py::handle arg = PyTuple_GET_ITEM(call.ptr(), 1);
    op o{*kind, 0, {}, {}};
    switch (o.kind) {
      case op::boolean:
        o.val = amf::value::boolean(PyObject_IsTrue(arg.ptr()) == 1);
        break;
      case op::byte:
      case op::unsigned_byte:
      case op::short_:
      case op::unsigned_short:
      case op::int_: {
        const unsigned long bits = PyLong_AsUnsignedLongMask(arg.ptr());
        if (PyErr_Occurred()) throw py::error_already_set();
        o.val = amf::value::integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)));
        break;
      }
      case op::unsigned_int:
      case op::float_:
      case op::double_:
        o.val = amf::value::number(PyFloat_AsDouble(arg.ptr()));
        if (PyErr_Occurred()) throw py::error_already_set();
        if (o.kind == op::float_ && std::isfinite(o.val.to_double()) &&
            std::fabs(o.val.to_double()) > std::numeric_limits<float>::max()) {
          fail(PyExc_OverflowError, "a float beyond 32 bits' range");
        }
        break;
      case op::utf:
      case op::multi_byte:
        if (!PyUnicode_Check(arg.ptr())) fail(PyExc_TypeError, "a string call without a str");
        o.val = amf::value::string(text(arg));
        if (o.kind == op::multi_byte) {
          if (n < 3 || !PyUnicode_Check(PyTuple_GET_ITEM(call.ptr(), 2)))
            fail(PyExc_TypeError, "a multi_byte call without its charset");
          o.charset = text(PyTuple_GET_ITEM(call.ptr(), 2));
        }
        break;
      case op::utf_bytes:  // writeUTFBytes's text, or writeBytes's bytes: written as they are
        if (PyBytes_Check(arg.ptr())) {
          o.val = amf::value::string(std::string_view(
              PyBytes_AS_STRING(arg.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(arg.ptr()))));
        } else if (PyUnicode_Check(arg.ptr())) {
          o.val = amf::value::string(text(arg));
        } else {
          fail(PyExc_TypeError, "a bytes call without str or bytes");
        }
        break;
      case op::object:
        o.val = convert(arg);
        break;
    }
    e->ops.push_back(o);
    path_.pop_back();
  }
  return v;
}

std::string from_python::type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__qualname__")).cast<std::string>();
}

void from_python::too_deep() {
  fail(PyExc_ValueError, "nesting deeper than max_depth (" + std::to_string(opt_.max_depth) + ")");
}

void from_python::fail(PyObject* type, const std::string& what) {
  PyErr_SetString(type, ("cannot encode " + what + " at " + path()).c_str());
  throw py::error_already_set();
}

std::string from_python::path() const {
  if (path_.empty()) return "the top";
  std::string out;
  for (const auto& s : path_) {
    if (s.name) {
      if (!out.empty()) out += '.';
      // A name that UTF-8 cannot hold is shown with escapes.
      py::bytes name = py::reinterpret_steal<py::bytes>(
          PyUnicode_AsEncodedString(s.name.ptr(), "utf-8", "backslashreplace"));
      if (!name) throw py::error_already_set();
      out += std::string(name);
    } else {
      out += '[' + std::to_string(s.index) + ']';
    }
  }
  return out;
}

}  // namespace amfgate::python
