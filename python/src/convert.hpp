// Conversion between amfgate's AMF value model and Python objects, for the `amfgate` module.
//
// Decoding: the codec reads bytes into a document arena with the GIL released; `to_python`
// then builds Python objects from the graph, one per node, so shared and cyclic graphs come
// out shared and cyclic. Encoding: `from_python` builds a value graph in a document from
// Python objects (one node per object, so cycles become AMF references), and the codec's
// encoder writes it.
#pragma once

#include <pybind11/pybind11.h>

#include <amf/decode.hpp>
#include <amf/externalizable.hpp>
#include <amf/value.hpp>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pointer_map.hpp"

namespace amfgate::python {

namespace py = pybind11;

/// The Python types of amfgate/_types.py, and the classes registered for typed objects.
/// One per interpreter, kept for its life (never destroyed: Python may be gone by then).
struct state {
  py::object undefined, xml, xml_document, typed_object, mixed_array, dictionary, array_collection,
      array_list, object_proxy, external, decode_error, array_array;

  struct registered {
    py::object cls;
    std::string alias;
    std::vector<std::string> sealed;  ///< the sealed members, in order
    std::vector<py::object> names;    ///< the same, as interned Python strings
    bool dynamic = false;             ///< the rest of the instance's __dict__ goes too
    /// Externalizable (register_class's externalizable=): the IDataInput calls of its payload,
    /// which the codec reads; its __readamf__ and __writeamf__ run on them. Else not set.
    std::optional<std::vector<amf::op_spec>> layout;
  };
  std::unordered_map<PyTypeObject*, registered> by_type;
  std::unordered_map<std::string, PyTypeObject*> by_alias;
  /// The class codecs of a decode: the built-in ones and the registered layouts. Replaced,
  /// never changed: a decode with the GIL released keeps the one it began with.
  std::shared_ptr<const amf::class_registry> classes;
  py::object data_input;  ///< amfgate._types._Input

  static state& get();
};

/// The IDataInput and IDataOutput calls by the names that amfgate.External records and that
/// register_class's layouts list, in the order of external_op's kinds.
inline constexpr std::array<std::string_view, amf::external_op::object + 1> call_names{
    "boolean", "byte",   "unsigned_byte", "short",     "unsigned_short", "int",   "unsigned_int",
    "float",   "double", "utf",           "utf_bytes", "multi_byte",     "object"};
inline std::optional<amf::external_op::kind_t> call_kind(std::string_view name) {
  for (std::size_t k = 0; k < call_names.size(); ++k)
    if (call_names[k] == name) return static_cast<amf::external_op::kind_t>(k);
  return std::nullopt;
}

/// Raises amfgate.DecodeError(message, reason, offset); `offset` < 0 leaves it None.
[[noreturn]] void raise_decode_error(const std::string& message, std::string_view reason,
                                     long long offset);

/// The Python object for `v`, which lives in `doc` (small Flex messages are expanded to their
/// full form there).
py::object to_python(const amf::value& v, amf::document& doc);

/// Options of an encode.
struct encode_options {
  bool amf3 = true;
  std::size_t max_depth = amf::decode_options{}.max_depth;
  /// Called with an object of no known kind; what it returns is encoded in its place.
  py::object default_fn = py::none();
  /// {type: function}: an instance of exactly that type is encoded as what the function
  /// returns, before the built-in forms (a dict or list subclass can so go as something else).
  py::object encoders = py::none();
  /// Milliseconds taken from every datetime written (Py3AMF's timezone_offset).
  double date_shift_ms = 0;
};

/// Builds the graph of `obj` in `doc`. Raises TypeError (or OverflowError, ValueError) that
/// names the path of what could not be encoded: "[3].owner.created".
class from_python {
 public:
  from_python(amf::document& doc, const encode_options& opt);
  amf::value convert(py::handle obj);

 private:
  amf::value scalar_or_node(py::handle obj);
  amf::value node_of(py::handle obj);
  amf::value dict(py::handle obj, std::string_view alias);
  amf::value pairs(py::handle obj);
  amf::value typed_dict(py::handle obj);
  amf::value replaced(py::handle obj, const py::object& fn);
  amf::value remember(PyObject* o, amf::value v);
  static std::string type_name(py::handle obj);
  amf::value mixed(py::handle obj);
  amf::value sequence(py::handle obj);
  amf::value vector(py::handle obj);
  amf::value typed(py::handle obj, const state::registered& r);
  amf::value date(py::handle obj);
  amf::value external(py::handle obj, std::string_view alias, bool list);
  amf::value recorded(py::handle obj, py::handle written_by = {});
  const amf::traits* external_traits(std::string_view alias);
  std::string_view text(py::handle str);
  std::string_view member_name(py::handle key);
  py::handle hold(PyObject* o);
  [[noreturn]] void fail(PyObject* type, const std::string& what);
  [[noreturn]] void too_deep();
  std::string path() const;

  struct step {
    std::size_t index;
    py::handle name;  ///< a str, or null for an index
  };
  amf::document& doc_;
  encode_options opt_;
  pointer_map<amf::value> seen_;  ///< objects with identity, by address
  std::vector<step> path_;
  PyObject* standing_in_ = nullptr;    ///< what default() returned, while it converts
  PyObject* original_ = nullptr;       ///< the object it stands for
  std::pmr::vector<py::object> keep_;  ///< what the graph views, held until it is written
  std::unordered_map<std::string, const amf::traits*> traits_;  ///< by alias
};

}  // namespace amfgate::python
