// The `amfgate._amfgate` extension: loads/dumps, packets and the class registry, on the C++
// codec. The Python package (python/amfgate/__init__.py) is the documented face of it.
#include <pybind11/stl.h>

#include <amf/encode.hpp>
#include <amf/packet.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "convert.hpp"

namespace amfgate::python {

state& state::get() {
  static state* s = [] {
    auto* st = new state;  // never destroyed: it holds Python objects past the interpreter
    py::module_ types = py::module_::import("amfgate._types");
    st->undefined = types.attr("undefined");
    st->xml = types.attr("XML");
    st->xml_document = types.attr("XMLDocument");
    st->typed_object = types.attr("TypedObject");
    st->mixed_array = types.attr("MixedArray");
    st->dictionary = types.attr("Dictionary");
    st->array_collection = types.attr("ArrayCollection");
    st->array_list = types.attr("ArrayList");
    st->object_proxy = types.attr("ObjectProxy");
    st->external = types.attr("External");
    st->data_input = types.attr("_Input");
    st->classes = std::make_shared<const amf::class_registry>(amf::class_registry::builtin());
    st->decode_error = types.attr("DecodeError");
    st->array_array = py::module_::import("array").attr("array");
    return st;
  }();
  return *s;
}

void raise_decode_error(const std::string& message, std::string_view reason, long long offset) {
  py::object error =
      state::get().decode_error(message, py::str(reason.data(), reason.size()),
                                offset < 0 ? py::object(py::none()) : py::object(py::int_(offset)));
  PyErr_SetObject(state::get().decode_error.ptr(), error.ptr());
  throw py::error_already_set();
}

namespace {

std::string_view reason_of(const std::error_code& code) {
  switch (static_cast<amf::errc>(code.value())) {
    case amf::errc::truncated:
      return "truncated";
    case amf::errc::unknown_marker:
      return "unknown_marker";
    case amf::errc::bad_reference:
      return "bad_reference";
    case amf::errc::depth_exceeded:
      return "depth_exceeded";
    case amf::errc::limit_exceeded:
      return "limit_exceeded";
    case amf::errc::length_exceeds_input:
      return "length_exceeds_input";
    case amf::errc::unknown_externalizable:
      return "unknown_externalizable";
    case amf::errc::bad_external:
      return "bad_external";
    case amf::errc::bad_packet_version:
      return "bad_packet_version";
    case amf::errc::trailing_bytes:
      return "trailing_bytes";
  }
  return "unknown";
}

[[noreturn]] void raise(const amf::decode_error& ec) {
  raise_decode_error(ec.message(), reason_of(ec.code), static_cast<long long>(ec.offset));
}

// The bytes of a buffer-protocol object, viewed (no copy) for the life of this object.
class input {
 public:
  explicit input(py::handle data) {
    if (PyObject_GetBuffer(data.ptr(), &view_, PyBUF_C_CONTIGUOUS) != 0)
      throw py::error_already_set();
  }
  ~input() { PyBuffer_Release(&view_); }
  input(const input&) = delete;
  input& operator=(const input&) = delete;
  std::span<const std::byte> bytes() const {
    return {static_cast<const std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
  }

 private:
  Py_buffer view_{};
};

// Inputs this large are decoded with the GIL released; below it, releasing costs more than it
// lets other threads gain.
constexpr std::size_t release_gil_bytes = 16 * 1024;

// A decode's options: its limits, and the class codecs as they are now (kept while it runs).
struct decode_setup {
  decode_setup(std::size_t max_depth, std::size_t max_elements, std::size_t max_references,
               std::size_t max_string_bytes)
      : classes(state::get().classes) {
    opt.max_depth = max_depth;
    opt.max_elements = max_elements;
    opt.max_references = max_references;
    opt.max_string_bytes = max_string_bytes;
    opt.classes = classes.get();
  }
  decode_setup(const decode_setup&) = delete;
  decode_setup& operator=(const decode_setup&) = delete;
  std::shared_ptr<const amf::class_registry> classes;
  amf::decode_options opt;
};

template <class F>
void decode_with_gil_released(std::size_t size, F&& f) {
  if (size < release_gil_bytes) {
    f();
  } else {
    py::gil_scoped_release released;
    f();
  }
}

py::object loads(py::handle data, bool amf3, std::size_t max_depth, std::size_t max_elements,
                 std::size_t max_references, std::size_t max_string_bytes) {
  input in(data);
  const decode_setup setup(max_depth, max_elements, max_references, max_string_bytes);
  const amf::decode_options& opt = setup.opt;
  amf::document doc;
  amf::decode_error ec;
  amf::value v;
  decode_with_gil_released(in.bytes().size(), [&] {
    v = amf3 ? amf::decode_amf3(in.bytes(), doc, ec, opt)
             : amf::decode_amf0(in.bytes(), doc, ec, opt);
  });
  if (ec) raise(ec);
  return to_python(v, doc);
}

// Consecutive values of one input, sharing reference tables (a SOL file's, or a stream that
// Py3AMF's decode() iterates).
py::list loads_all(py::handle data, bool amf3, std::size_t max_depth, std::size_t max_elements,
                   std::size_t max_references, std::size_t max_string_bytes) {
  input in(data);
  const decode_setup setup(max_depth, max_elements, max_references, max_string_bytes);
  const amf::decode_options& opt = setup.opt;
  amf::document doc;
  amf::decode_error ec;
  std::vector<amf::value> values;
  decode_with_gil_released(in.bytes().size(), [&] {
    amf::decoder reader(in.bytes(), doc, opt);
    while (!reader.at_end() && !ec) {
      amf::value v = amf3 ? reader.read_amf3(ec) : reader.read_amf0(ec);
      if (!ec) values.push_back(v);
    }
  });
  if (ec) raise(ec);
  py::list out;
  for (const auto& v : values) out.append(to_python(v, doc));
  return out;
}

// The encoder's output, reused by the calls of one thread.
std::string& scratch() {
  thread_local std::string out;
  out.clear();
  return out;
}

// The options that every encoding function takes (see amfgate.dumps).
encode_options options(bool amf3, const py::object& fallback, const py::object& encoders,
                       const py::object& timezone_offset, std::size_t max_depth) {
  encode_options opt{amf3, max_depth, fallback, encoders, 0};
  if (!encoders.is_none() && !PyDict_Check(encoders.ptr()))
    throw py::type_error("encoders is a dict of types to functions");
  if (!timezone_offset.is_none())
    opt.date_shift_ms = timezone_offset.attr("total_seconds")().cast<double>() * 1000.0;
  return opt;
}

const std::string& encode(py::handle obj, const encode_options& opt) {
  amf::document doc;
  from_python build(doc, opt);
  const bool amf3 = opt.amf3;
  const amf::value v = build.convert(obj);
  std::string& out = scratch();
  if (amf3)
    amf::encode_amf3(v, out);
  else
    amf::encode_amf0(v, out);
  if (out.capacity() > (std::size_t{1} << 20) && out.size() < out.capacity() / 4)
    out.shrink_to_fit();
  return out;
}

// Consecutive values, sharing reference tables.
py::bytes dumps_all(const py::iterable& values, bool amf3, const py::object& fallback,
                    const py::object& encoders, const py::object& timezone_offset,
                    std::size_t max_depth) {
  amf::document doc;
  from_python build(doc, options(amf3, fallback, encoders, timezone_offset, max_depth));
  std::vector<amf::value> graph;
  for (auto v : values) graph.push_back(build.convert(v));
  std::string& out = scratch();
  amf::encoder writer(out);
  for (const auto& v : graph) {
    if (amf3)
      writer.write_amf3(v);
    else
      writer.write_amf0(v);
  }
  return {out.data(), out.size()};
}

py::bytes dumps(py::handle obj, bool amf3, const py::object& fallback, const py::object& encoders,
                const py::object& timezone_offset, std::size_t max_depth) {
  const std::string& out =
      encode(obj, options(amf3, fallback, encoders, timezone_offset, max_depth));
  return {out.data(), out.size()};
}

std::size_t dumps_into(py::bytearray buffer, py::handle obj, bool amf3, const py::object& fallback,
                       const py::object& encoders, const py::object& timezone_offset,
                       std::size_t max_depth) {
  const std::string& out =
      encode(obj, options(amf3, fallback, encoders, timezone_offset, max_depth));
  const Py_ssize_t at = PyByteArray_GET_SIZE(buffer.ptr());
  if (PyByteArray_Resize(buffer.ptr(), at + static_cast<Py_ssize_t>(out.size())) != 0)
    throw py::error_already_set();
  std::copy(out.begin(), out.end(), PyByteArray_AS_STRING(buffer.ptr()) + at);
  return out.size();
}

using header_tuple = std::tuple<py::str, bool, py::object>;
using body_tuple = std::tuple<py::str, py::str, py::object>;

std::tuple<int, std::vector<header_tuple>, std::vector<body_tuple>> decode_packet(
    py::handle data, std::size_t max_depth, std::size_t max_elements, std::size_t max_references,
    std::size_t max_string_bytes) {
  input in(data);
  const decode_setup setup(max_depth, max_elements, max_references, max_string_bytes);
  const amf::decode_options& opt = setup.opt;
  amf::document doc;
  amf::decode_error ec;
  amf::packet p(doc.resource());
  decode_with_gil_released(in.bytes().size(),
                           [&] { p = amf::decode_packet(in.bytes(), doc, ec, opt); });
  if (ec) raise(ec);
  auto str = [](std::string_view s) { return py::str(s.data(), s.size()); };
  std::vector<header_tuple> headers;
  for (const auto& h : p.headers)
    headers.emplace_back(str(h.name), h.must_understand, to_python(h.val, doc));
  std::vector<body_tuple> bodies;
  for (const auto& b : p.bodies)
    bodies.emplace_back(str(b.target), str(b.response), to_python(b.val, doc));
  return {p.version, std::move(headers), std::move(bodies)};
}

// In a version 3 packet each header, each reply and each argument of a call goes behind the
// AMF3 switch, as Flex and NetConnection with objectEncoding 3 send them.
amf::value packet_value(from_python& build, py::handle obj, bool amf3, bool arguments) {
  amf::value v = build.convert(obj);
  if (!amf3) return v;
  if (auto* a = v.as_array();
      arguments && a != nullptr && a->kind == amf::type::array && a->assoc.empty()) {
    for (auto& item : a->dense) item = item.with_flags(item.flags() | amf::value::avmplus);
    return v;
  }
  return v.with_flags(v.flags() | amf::value::avmplus);
}

py::bytes encode_packet(int version,
                        const std::vector<std::tuple<std::string, bool, py::object>>& headers,
                        const std::vector<std::tuple<std::string, std::string, py::object>>& bodies,
                        const std::string& lengths, const py::object& fallback,
                        const py::object& encoders, const py::object& timezone_offset,
                        std::size_t max_depth) {
  if (lengths != "computed" && lengths != "zero")
    throw py::value_error("lengths is \"computed\" or \"zero\", not \"" + lengths + "\"");
  // "zero" writes 0 for every header's and body's length, as Py3AMF does when not strict.
  const std::uint32_t given = lengths == "zero" ? 0 : amf::unknown_length;
  if (version != 0 && version != 3)
    throw py::value_error("a packet's version is 0 or 3, not " + std::to_string(version));
  const bool amf3 = version == 3;
  amf::document doc;
  from_python build(doc, options(amf3, fallback, encoders, timezone_offset, max_depth));
  amf::packet p(doc.resource());
  p.version = static_cast<std::uint16_t>(version);
  for (const auto& [name, must, val] : headers)
    p.headers.push_back({doc.copy(name), must, given, packet_value(build, val, amf3, false)});
  for (const auto& [target, response, val] : bodies) {
    amf::body b{doc.copy(target), doc.copy(response), given, {}};
    b.val = packet_value(build, val, amf3, b.is_request());
    p.bodies.push_back(b);
  }
  std::string& out = scratch();
  amf::encode_packet(p, out,
                     given == 0 ? amf::length_fields::as_given : amf::length_fields::computed);
  return {out.data(), out.size()};
}

// One IDataInput call of a layout: a kind's name, or (kind, length) for "utf_bytes",
// (kind, length, charset) for "multi_byte".
amf::op_spec op_of(py::handle item) {
  using op = amf::external_op;
  if (py::isinstance<py::str>(item)) {  // a call of a fixed size (or an object)
    const auto kind = call_kind(item.cast<std::string>());
    if (!kind || *kind == op::utf_bytes || *kind == op::multi_byte)
      throw py::value_error("externalizable: no IDataInput call " +
                            py::repr(item).cast<std::string>());
    return {*kind};
  }
  if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
    try {
      const auto t = item.cast<py::tuple>();
      const std::string kind = t.empty() ? "" : t[0].cast<std::string>();
      if (kind == "utf_bytes" && t.size() == 2) return {op::utf_bytes, t[1].cast<std::uint32_t>()};
      if (kind == "multi_byte" && t.size() == 3)
        return {op::multi_byte, t[1].cast<std::uint32_t>(), t[2].cast<std::string>()};
    } catch (const py::cast_error&) {
      // (a length or charset of another type: said below)
    }
  }
  throw py::value_error("externalizable: no IDataInput call " + py::repr(item).cast<std::string>() +
                        " (a kind, (\"utf_bytes\", length) or (\"multi_byte\", length, charset))");
}

// The built-in codecs, and those of the classes registered with a layout.
void rebuild_classes(state& st) {
  auto classes = std::make_shared<amf::class_registry>(amf::class_registry::builtin());
  for (const auto& [type, r] : st.by_type)
    if (r.layout) classes->add(r.alias, amf::ops_codec(*r.layout));
  st.classes = std::move(classes);
}

void register_class(py::type cls, const std::string& alias, std::vector<std::string> sealed,
                    bool dynamic, std::optional<std::vector<py::object>> externalizable) {
  if (alias.empty()) throw py::value_error("a class alias is not empty");
  std::vector<py::object> names;
  for (const auto& name : sealed) {
    PyObject* interned = PyUnicode_InternFromString(name.c_str());
    if (interned == nullptr) throw py::error_already_set();
    names.push_back(py::reinterpret_steal<py::object>(interned));
  }
  std::optional<std::vector<amf::op_spec>> layout;
  if (externalizable) {
    layout.emplace();
    for (const auto& item : *externalizable) layout->push_back(op_of(item));
  }
  // (Only now: a registration refused above leaves the registry as it was.)
  state& st = state::get();
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (auto old = st.by_alias.find(alias); old != st.by_alias.end()) st.by_type.erase(old->second);
  if (auto old = st.by_type.find(type); old != st.by_type.end())
    st.by_alias.erase(old->second.alias);
  st.by_type[type] = {cls, alias, std::move(sealed), std::move(names), dynamic, std::move(layout)};
  st.by_alias[alias] = type;
  rebuild_classes(st);
}

void unregister_class(const std::string& alias) {
  state& st = state::get();
  auto it = st.by_alias.find(alias);
  if (it == st.by_alias.end()) throw py::key_error(alias);
  st.by_type.erase(it->second);
  st.by_alias.erase(it);
  rebuild_classes(st);
}

}  // namespace

}  // namespace amfgate::python

PYBIND11_MODULE(_amfgate, m) {
  using namespace amfgate::python;
  namespace py = pybind11;
  const amf::decode_options d;
  m.doc() = "amfgate's AMF codec (C++), for the amfgate package";
  m.def("loads", &loads, py::arg("data"), py::kw_only(), py::arg("amf3") = true,
        py::arg("max_depth") = d.max_depth, py::arg("max_elements") = d.max_elements,
        py::arg("max_references") = d.max_references,
        py::arg("max_string_bytes") = d.max_string_bytes);
  m.def("dumps", &dumps, py::arg("obj"), py::kw_only(), py::arg("amf3") = true,
        py::arg("default") = py::none(), py::arg("encoders") = py::none(),
        py::arg("timezone_offset") = py::none(), py::arg("max_depth") = d.max_depth);
  m.def("dumps_into", &dumps_into, py::arg("buffer"), py::arg("obj"), py::kw_only(),
        py::arg("amf3") = true, py::arg("default") = py::none(), py::arg("encoders") = py::none(),
        py::arg("timezone_offset") = py::none(), py::arg("max_depth") = d.max_depth);
  m.def("decode_packet", &decode_packet, py::arg("data"), py::kw_only(),
        py::arg("max_depth") = d.max_depth, py::arg("max_elements") = d.max_elements,
        py::arg("max_references") = d.max_references,
        py::arg("max_string_bytes") = d.max_string_bytes);
  m.def("encode_packet", &encode_packet, py::arg("version"), py::arg("headers"), py::arg("bodies"),
        py::kw_only(), py::arg("lengths") = "computed", py::arg("default") = py::none(),
        py::arg("encoders") = py::none(), py::arg("timezone_offset") = py::none(),
        py::arg("max_depth") = d.max_depth);
  m.def("register_class", &register_class, py::arg("cls"), py::arg("alias"), py::arg("sealed"),
        py::arg("dynamic"), py::arg("externalizable") = py::none());
  m.def("unregister_class", &unregister_class, py::arg("alias"));
  m.def("loads_all", &loads_all, py::arg("data"), py::kw_only(), py::arg("amf3") = true,
        py::arg("max_depth") = d.max_depth, py::arg("max_elements") = d.max_elements,
        py::arg("max_references") = d.max_references,
        py::arg("max_string_bytes") = d.max_string_bytes);
  m.def("dumps_all", &dumps_all, py::arg("values"), py::kw_only(), py::arg("amf3") = true,
        py::arg("default") = py::none(), py::arg("encoders") = py::none(),
        py::arg("timezone_offset") = py::none(), py::arg("max_depth") = d.max_depth);
}
