// The AMF value model: a small `value` handle and nodes that live in a `document` arena.
//
// Scalars (undefined, null, booleans, integers, doubles, strings) are held in the handle;
// everything with identity (dates, objects, arrays, byte arrays, XML, vectors, dictionaries,
// externalizable objects) is a node in the arena of a `document`, and a handle points at it.
// A reference on the wire becomes the same pointer, so sharing and cycles survive a round
// trip, and the whole graph is freed at once with its document.
//
// Lifetimes: strings, names and byte arrays of decoded values are views into the decoder's
// input unless `decode_options::copy_strings` is set; the input must then outlive the document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory_resource>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace amf {

/// The kind of a value.
enum class type : std::uint8_t {
  undefined,
  null,
  boolean,
  integer,  ///< AMF3 integer (29-bit); goes as a double in AMF0 or when out of range
  number,   ///< IEEE-754 double
  string,
  unsupported,  ///< AMF0 unsupported marker 0x0D
  date,
  object,
  array,       ///< AMF0 strict array or AMF3 array (dense + associative part)
  ecma_array,  ///< AMF0 ECMA array (0x08)
  byte_array,
  xml,           ///< E4X XML (AMF3 0x0B)
  xml_document,  ///< legacy XMLDocument (AMF0 0x0F, AMF3 0x07)
  vector_int,
  vector_uint,
  vector_double,
  vector_object,
  dictionary,
  externalizable,
};

/// Human-readable name of a type ("int", "string", "object", ...), for messages.
std::string_view type_name(type t) noexcept;

struct node {
  explicit node(type k) : kind(k) {}
  type kind;
  /// Set by the decoder when the input refers to this node again (an AMF0 or AMF3 reference):
  /// a walk of a decoded graph needs to remember only these nodes to keep its sharing.
  bool referenced = false;
};

class value;
struct date_node;
struct object_node;
struct array_node;
struct bytes_node;
struct xml_node;
struct vector_node;
struct dictionary_node;
struct external_node;

/// A value handle: 16 bytes, trivially copyable. Strings are views (see the file comment).
class value {
 public:
  /// Per-value encoding hints that round-trip what the wire had.
  enum flag : std::uint8_t {
    long_string = 1,  ///< AMF0: write this string as a long string (0x0C) whatever its length
    avmplus = 2,      ///< AMF0: this value was (and will be) sent behind the 0x11 AMF3 switch
  };

  constexpr value() noexcept : u_{} {}

  static constexpr value undefined() noexcept { return value{}; }
  static constexpr value null() noexcept { return value(type::null); }
  static constexpr value unsupported() noexcept { return value(type::unsupported); }
  static constexpr value boolean(bool b) noexcept {
    value v(type::boolean);
    v.u_.b = b;
    return v;
  }
  static constexpr value integer(std::int32_t i) noexcept {
    value v(type::integer);
    v.u_.i = i;
    return v;
  }
  static constexpr value number(double d) noexcept {
    value v(type::number);
    v.u_.d = d;
    return v;
  }
  /// A string view; the characters must outlive the value (use `document::copy`).
  static value string(std::string_view s, std::uint8_t flags = 0) noexcept {
    value v(type::string);
    v.u_.s = s.data();
    v.size_ = static_cast<std::uint32_t>(s.size());
    v.flags_ = flags;
    return v;
  }
  /// A handle to a node of kind `n->kind`.
  static value of(node* n) noexcept {
    value v(n->kind);
    v.u_.n = n;
    return v;
  }

  type kind() const noexcept { return type_; }
  std::uint8_t flags() const noexcept { return flags_; }
  value with_flags(std::uint8_t f) const noexcept {
    value v = *this;
    v.flags_ = f;
    return v;
  }
  bool has_flag(flag f) const noexcept { return (flags_ & f) != 0; }

  bool is_undefined() const noexcept { return type_ == type::undefined; }
  bool is_null() const noexcept { return type_ == type::null; }
  bool is_node() const noexcept { return type_ >= type::date; }
  /// integer or number
  bool is_numeric() const noexcept { return type_ == type::integer || type_ == type::number; }

  bool as_bool() const noexcept { return u_.b; }
  std::int32_t as_int() const noexcept { return u_.i; }
  double as_double() const noexcept { return u_.d; }
  /// The numeric value of an integer or a number.
  double to_double() const noexcept {
    return type_ == type::integer ? static_cast<double>(u_.i) : u_.d;
  }
  std::string_view as_string() const noexcept { return {u_.s, size_}; }
  node* as_node() const noexcept { return is_node() ? u_.n : nullptr; }

  date_node* as_date() const noexcept;
  object_node* as_object() const noexcept;
  array_node* as_array() const noexcept;  ///< array or ecma_array
  bytes_node* as_bytes() const noexcept;
  xml_node* as_xml() const noexcept;  ///< xml or xml_document
  vector_node* as_vector() const noexcept;
  dictionary_node* as_dictionary() const noexcept;
  external_node* as_external() const noexcept;

 private:
  constexpr explicit value(type t) noexcept : u_{}, type_(t) {}

  union payload {
    bool b;
    std::int32_t i;
    double d;
    const char* s;
    node* n;
  } u_;
  type type_ = type::undefined;
  std::uint8_t flags_ = 0;
  std::uint32_t size_ = 0;
};

/// A name/value pair of an object's dynamic part or an array's associative part.
struct member {
  std::string_view name;
  value val;
};

/// Class traits, shared by pointer between the objects of one class.
struct traits {
  std::string_view alias;  ///< "" for anonymous objects
  bool dynamic = false;
  bool externalizable = false;
  std::pmr::vector<std::string_view> sealed;

  explicit traits(std::pmr::memory_resource* r) : sealed(r) {}
  /// Same alias, flags and sealed names.
  bool same_as(const traits& o) const noexcept;
};

struct date_node : node {
  date_node(double ms, std::int16_t tz) : node(type::date), millis(ms), timezone(tz) {}
  double millis;          ///< since 1970-01-01T00:00:00Z, bit-exact
  std::int16_t timezone;  ///< raw AMF0 time-zone field, kept and written back as read
};

struct object_node : node {
  object_node(const traits* t, std::pmr::memory_resource* r)
      : node(type::object), cls(t), sealed(r), dynamic(r) {}
  const traits* cls;
  std::pmr::vector<value> sealed;    ///< in the order of `cls->sealed`
  std::pmr::vector<member> dynamic;  ///< in wire order, repeats kept

  /// The first member named `name`, sealed first; nullptr if none.
  const value* find(std::string_view name) const noexcept;
  value* find(std::string_view name) noexcept {
    return const_cast<value*>(std::as_const(*this).find(name));
  }
};

/// AMF3 array or AMF0 strict array (`kind == type::array`), or AMF0 ECMA array
/// (`kind == type::ecma_array`, all members in `assoc`).
struct array_node : node {
  array_node(type k, std::pmr::memory_resource* r) : node(k), dense(r), assoc(r) {}
  std::pmr::vector<value> dense;
  std::pmr::vector<member> assoc;  ///< in wire order
  std::uint32_t ecma_count = 0;    ///< the raw count field of an AMF0 ECMA array
};

struct bytes_node : node {
  explicit bytes_node(std::span<const std::byte> b) : node(type::byte_array), bytes(b) {}
  std::span<const std::byte> bytes;
};

struct xml_node : node {
  xml_node(type k, std::string_view t) : node(k), text(t) {}
  std::string_view text;  ///< kept as text, never parsed
};

struct vector_node : node {
  vector_node(type k, std::pmr::memory_resource* r)
      : node(k), ints(r), uints(r), doubles(r), objects(r) {}
  bool fixed = false;
  std::string_view type_name;             ///< element class of an object vector ("" = Object or *)
  std::pmr::vector<std::int32_t> ints;    ///< vector_int
  std::pmr::vector<std::uint32_t> uints;  ///< vector_uint
  std::pmr::vector<double> doubles;       ///< vector_double
  std::pmr::vector<value> objects;        ///< vector_object
  std::size_t size() const noexcept;
};

struct dictionary_node : node {
  explicit dictionary_node(std::pmr::memory_resource* r) : node(type::dictionary), entries(r) {}
  struct entry {
    value key;
    value val;
  };
  bool weak_keys = false;
  std::pmr::vector<entry> entries;  ///< in wire order
};

/// One IDataInput/IDataOutput call of an externalizable payload.
struct external_op {
  enum kind_t : std::uint8_t {
    boolean,
    byte,
    unsigned_byte,
    short_,
    unsigned_short,
    int_,
    unsigned_int,
    float_,
    double_,
    utf,
    utf_bytes,
    multi_byte,
    object,
  };
  kind_t kind;
  std::uint32_t length = 0;  ///< bytes, for utf_bytes and multi_byte
  std::string_view charset;  ///< for multi_byte
  value val;  ///< boolean; integer for byte..int_; number for unsigned_int, float_, double_;
              ///< string (UTF-8) for utf, utf_bytes, multi_byte; any value for object
};

/// An IExternalizable object. How its payload is held depends on its class codec.
struct external_node : node {
  enum class form : std::uint8_t {
    single,         ///< one AMF3 value (ArrayCollection, ArrayList, ObjectProxy): `payload`
    small_message,  ///< BlazeDS DSK/DSA/DSC: `payload` is an anonymous object of the fields
                    ///< present, in wire order; `flags` holds the flag bytes per level
    ops,            ///< a transcription of the IDataInput calls: `ops`
    raw,            ///< unknown class kept as the rest of the input: `raw`
  };
  external_node(const traits* t, std::pmr::memory_resource* r)
      : node(type::externalizable),
        cls(t),
        ops(r),
        flags{std::pmr::vector<std::uint8_t>(r), std::pmr::vector<std::uint8_t>(r),
              std::pmr::vector<std::uint8_t>(r)} {}
  const traits* cls;
  form layout = form::single;
  value payload;
  std::pmr::vector<external_op> ops;
  std::span<const std::byte> raw;
  /// Small messages: flag bytes of the Abstract, Async and third (Ack or Command) level;
  /// all empty means "compute from the fields present" when encoding.
  std::pmr::vector<std::uint8_t> flags[3];
};

/// Keeps the blocks that arenas give back and hands them to the next arena, so that a
/// server decoding one document per request does not fault fresh pages in every time.
/// Thread-safe; blocks are rounded up to powers of two; at most `max_cached_bytes` are kept.
class block_pool : public std::pmr::memory_resource {
 public:
  explicit block_pool(std::size_t max_cached_bytes = std::size_t{64} << 20);
  ~block_pool() override;
  block_pool(const block_pool&) = delete;
  block_pool& operator=(const block_pool&) = delete;

  /// The process-wide pool that documents use unless given another upstream.
  static block_pool& shared();

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override {
    return this == &o;
  }

  struct state;
  state* state_;
};

/// Owns the arena that the nodes of one decoded or built value graph live in.
/// Not copyable or movable: values point into it.
class document {
 public:
  /// `upstream` supplies the arena's blocks (to count or bound what a document takes).
  explicit document(std::size_t initial_bytes = 4096,
                    std::pmr::memory_resource* upstream = &block_pool::shared())
      : arena_(initial_bytes, upstream) {}
  document(const document&) = delete;
  document& operator=(const document&) = delete;

  std::pmr::memory_resource* resource() noexcept { return &arena_; }

  /// Constructs a T in the arena. Nodes are never destroyed; their memory goes with the arena.
  template <class T, class... Args>
  T* create(Args&&... args) {
    void* p = arena_.allocate(sizeof(T), alignof(T));
    return ::new (p) T(std::forward<Args>(args)...);
  }

  /// Copies characters into the arena.
  std::string_view copy(std::string_view s);
  std::span<const std::byte> copy(std::span<const std::byte> b);

  // Builders for values made in C++. Strings passed in are copied.
  value string(std::string_view s) { return value::string(copy(s)); }
  value date(double ms, std::int16_t tz = 0) { return value::of(create<date_node>(ms, tz)); }
  traits* make_traits(std::string_view alias, bool dynamic,
                      std::initializer_list<std::string_view> sealed = {});
  object_node* object(const traits* t);
  /// An anonymous dynamic object (class "", dynamic, no sealed members).
  object_node* object();
  array_node* array(std::size_t reserve = 0);
  bytes_node* bytes(std::span<const std::byte> b) { return create<bytes_node>(copy(b)); }
  xml_node* xml(type kind, std::string_view text) { return create<xml_node>(kind, copy(text)); }
  vector_node* vector(type kind) { return create<vector_node>(kind, resource()); }
  dictionary_node* dictionary() { return create<dictionary_node>(resource()); }
  external_node* external(const traits* t) { return create<external_node>(t, resource()); }
  /// The shared traits of anonymous dynamic objects.
  const traits* anonymous_traits();

 private:
  std::pmr::monotonic_buffer_resource arena_;
  traits* anonymous_ = nullptr;
};

inline date_node* value::as_date() const noexcept {
  return type_ == type::date ? static_cast<date_node*>(u_.n) : nullptr;
}
inline object_node* value::as_object() const noexcept {
  return type_ == type::object ? static_cast<object_node*>(u_.n) : nullptr;
}
inline array_node* value::as_array() const noexcept {
  return type_ == type::array || type_ == type::ecma_array ? static_cast<array_node*>(u_.n)
                                                           : nullptr;
}
inline bytes_node* value::as_bytes() const noexcept {
  return type_ == type::byte_array ? static_cast<bytes_node*>(u_.n) : nullptr;
}
inline xml_node* value::as_xml() const noexcept {
  return type_ == type::xml || type_ == type::xml_document ? static_cast<xml_node*>(u_.n) : nullptr;
}
inline vector_node* value::as_vector() const noexcept {
  return type_ >= type::vector_int && type_ <= type::vector_object ? static_cast<vector_node*>(u_.n)
                                                                   : nullptr;
}
inline dictionary_node* value::as_dictionary() const noexcept {
  return type_ == type::dictionary ? static_cast<dictionary_node*>(u_.n) : nullptr;
}
inline external_node* value::as_external() const noexcept {
  return type_ == type::externalizable ? static_cast<external_node*>(u_.n) : nullptr;
}

/// The items of a value that stands for a list, as views (nothing is copied):
/// - an AMF0 strict array or an AMF3 array: its dense part;
/// - an AMF0 ECMA array whose keys are "0" to "n-1" in that order (a dense ECMA array), which
///   is how Ruffle writes every AS3 Array, argument lists included.
/// An ECMA array with any other key is an associative array, not a list.
class list_view {
 public:
  list_view(const value* items, std::size_t n) noexcept : dense_(items), size_(n) {}
  list_view(const member* items, std::size_t n) noexcept : assoc_(items), size_(n) {}
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const value& operator[](std::size_t i) const noexcept {
    return dense_ ? dense_[i] : assoc_[i].val;
  }

 private:
  const value* dense_ = nullptr;
  const member* assoc_ = nullptr;
  std::size_t size_ = 0;
};

/// `v` as a list (see list_view), or nullopt.
std::optional<list_view> as_list(const value& v) noexcept;

/// Structural equality: same kinds, values (doubles bit for bit), aliases, traits and
/// members, and the same shape of sharing (two places that hold one node in `a` hold one
/// node in `b`). The time-zone field of dates is ignored unless `compare_timezone`.
bool equivalent(const value& a, const value& b, bool compare_timezone = false);

}  // namespace amf
