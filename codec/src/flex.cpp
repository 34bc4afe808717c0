#include "amf/flex.hpp"

#include "amf/externalizable.hpp"

#include <pthread.h>
#include <sys/random.h>
#include <chrono>
#include <cmath>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <unordered_set>
#include <vector>

namespace amf::flex {

namespace {

// Ids are bearer tokens (a DSId lets its holder poll, a subscription id names a stream), so
// they come from the kernel's CSPRNG, never from a seeded generator whose state the ids
// handed out would reveal. Bytes are drawn a block at a time per thread; a fork empties
// every block, so a child never hands out the ids its parent will.
std::atomic<unsigned> forks{0};

struct random_block {
  std::byte bytes[512];
  std::size_t used = sizeof bytes;
  unsigned generation = 0;

  void take(std::byte* out, std::size_t n) {
    static const int registered =
        pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
    (void)registered;
    const unsigned now = forks.load(std::memory_order_relaxed);
    if (generation != now || used + n > sizeof bytes) refill(now);
    std::memcpy(out, bytes + used, n);
    std::memset(bytes + used, 0, n);  // handed out once
    used += n;
  }

  void refill(unsigned now) {
    std::size_t got = 0;
    while (got < sizeof bytes) {
      const ssize_t r = ::getrandom(bytes + got, sizeof bytes - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw std::system_error(errno, std::system_category(), "getrandom");
      got += static_cast<std::size_t>(r);
    }
    used = 0;
    generation = now;
  }
};

void random_uuid(std::byte (&b)[16]) {
  thread_local random_block block;
  block.take(b, sizeof b);
  b[6] = (b[6] & std::byte{0x0F}) | std::byte{0x40};  // version 4
  b[8] = (b[8] & std::byte{0x3F}) | std::byte{0x80};  // RFC 4122 variant
}

// Writes the text of `bytes` at `out` (room for 2 * size + 4); returns its length.
std::size_t uuid_chars(std::span<const std::byte> bytes, char* out) {
  static constexpr char hex[] = "0123456789ABCDEF";
  char* p = out;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    auto c = std::to_integer<unsigned>(bytes[i]);
    *p++ = hex[c >> 4];
    *p++ = hex[c & 15];
  }
  return static_cast<std::size_t>(p - out);
}

const value* member_of(const object_node& o, std::string_view name) {
  return o.find(name);
}

std::string_view text_of(const value* v) {
  return v && v->kind() == type::string ? v->as_string() : std::string_view{};
}
double number_of(const value* v) {
  return v && v->is_numeric() ? v->to_double() : 0;
}
value value_of(const value* v) {
  return v ? *v : value::null();
}

// A small-form id: a 16-byte ByteArray becomes UUID text.
std::string_view id_from_bytes(const value* v, document& doc) {
  if (!v || !v->as_bytes() || v->as_bytes()->bytes.size() != 16) return {};
  char text[36];
  return doc.copy(std::string_view(text, uuid_chars(v->as_bytes()->bytes, text)));
}

// An anonymous object by its members (Ruffle's AMF0 writer drops every class name): a numeric
// operation is a CommandMessage; a string operation with a destination, a RemotingMessage;
// body, destination and messageId without an operation, an AsyncMessage.
std::optional<kind> kind_by_shape(const object_node& o) {
  if (const value* op = o.find("operation")) {
    if (op->is_numeric()) return kind::command;
    if (op->kind() == type::string && o.find("destination")) return kind::remoting;
    return std::nullopt;
  }
  if (o.find("body") && o.find("destination") && o.find("messageId")) return kind::async;
  return std::nullopt;
}

std::optional<kind> kind_of(std::string_view alias) {
  if (alias == remoting_alias) return kind::remoting;
  if (alias == command_alias || alias == "DSC") return kind::command;
  if (alias == acknowledge_alias || alias == "DSK") return kind::acknowledge;
  if (alias == error_alias) return kind::error;
  if (alias == async_alias || alias == "DSA") return kind::async;
  return std::nullopt;
}

}  // namespace

value message::header(std::string_view name) const {
  if (auto* o = headers.as_object()) {
    if (const value* v = o->find(name)) return *v;
  }
  return value::undefined();
}

std::optional<message> read(const value& v, document& doc) {
  const object_node* o = v.as_object();
  const external_node* e = v.as_external();
  if (e && e->layout == external_node::form::small_message) o = e->payload.as_object();
  if (!o) return std::nullopt;
  const bool anonymous = !e && o->cls->alias.empty();
  auto k = anonymous ? kind_by_shape(*o) : kind_of(e ? e->cls->alias : o->cls->alias);
  if (!k) return std::nullopt;
  message m;
  m.kind = *k;
  m.anonymous = anonymous;
  m.body = value_of(member_of(*o, "body"));
  m.client_id = value_of(member_of(*o, "clientId"));
  m.destination = text_of(member_of(*o, "destination"));
  m.headers = value_of(member_of(*o, "headers"));
  m.message_id = text_of(member_of(*o, "messageId"));
  m.timestamp = number_of(member_of(*o, "timestamp"));
  m.time_to_live = number_of(member_of(*o, "timeToLive"));
  m.correlation_id = text_of(member_of(*o, "correlationId"));
  if (e) {
    if (auto id = id_from_bytes(member_of(*o, "clientIdBytes"), doc); !id.empty()) {
      m.client_id = value::string(id);
    }
    if (auto id = id_from_bytes(member_of(*o, "messageIdBytes"), doc); !id.empty()) {
      m.message_id = id;
    }
    if (auto id = id_from_bytes(member_of(*o, "correlationIdBytes"), doc); !id.empty()) {
      m.correlation_id = id;
    }
  }
  switch (m.kind) {
    case kind::remoting:
      m.method = text_of(member_of(*o, "operation"));
      m.source = value_of(member_of(*o, "source"));
      break;
    case kind::command:
      // A whole number in range, else the operation stays unknown (10000): converting a
      // double out of int32_t's range is undefined (fuzz_gateway sent 1e300).
      if (const value* op = member_of(*o, "operation"); op && op->is_numeric()) {
        const double d = op->to_double();
        if (d >= -0x1p31 && d < 0x1p31 && std::trunc(d) == d) {
          m.command = static_cast<std::int32_t>(d);
        }
      }
      break;
    case kind::error:
      m.fault_code = text_of(member_of(*o, "faultCode"));
      m.fault_string = text_of(member_of(*o, "faultString"));
      m.fault_detail = text_of(member_of(*o, "faultDetail"));
      m.root_cause = value_of(member_of(*o, "rootCause"));
      m.extended_data = value_of(member_of(*o, "extendedData"));
      break;
    default:
      break;
  }
  return m;
}

namespace {
value text_or_null(document& doc, std::string_view s, bool null_if_empty) {
  return s.empty() && null_if_empty ? value::null() : doc.string(s);
}
}  // namespace

value make(document& doc, const message& m) {
  std::string_view alias = m.kind == kind::remoting      ? remoting_alias
                           : m.kind == kind::command     ? command_alias
                           : m.kind == kind::acknowledge ? acknowledge_alias
                           : m.kind == kind::error       ? error_alias
                                                         : async_alias;
  auto* t = doc.create<traits>(doc.resource());
  t->alias = alias;
  auto* o = doc.create<object_node>(t, doc.resource());
  constexpr std::size_t most_fields = 14;  // an error message's
  t->sealed.reserve(most_fields);
  o->sealed.reserve(most_fields);
  auto field = [&](std::string_view name, value v) {
    t->sealed.push_back(name);
    o->sealed.push_back(v);
  };
  // Members in the alphabetical order BlazeDS's bean proxy writes them in.
  field("body", m.body);
  field("clientId", m.client_id);
  if (m.kind != kind::remoting) field("correlationId", text_or_null(doc, m.correlation_id, false));
  field("destination", text_or_null(doc, m.destination, m.kind != kind::remoting));
  if (m.kind == kind::error) {
    field("extendedData", m.extended_data);
    field("faultCode", doc.string(m.fault_code));
    field("faultDetail", text_or_null(doc, m.fault_detail, true));
    field("faultString", doc.string(m.fault_string));
  }
  field("headers", m.headers.is_null() ? value::of(doc.object()) : m.headers);
  field("messageId", doc.string(m.message_id));
  if (m.kind == kind::command) field("operation", value::integer(m.command));
  if (m.kind == kind::remoting) field("operation", doc.string(m.method));
  if (m.kind == kind::error) field("rootCause", m.root_cause);
  if (m.kind == kind::remoting) field("source", m.source);
  field("timeToLive", value::number(m.time_to_live));
  field("timestamp", value::number(m.timestamp));
  return value::of(o);
}

value make_small(document& doc, const message& m) {
  if (m.kind == kind::error || m.kind == kind::remoting) return make(doc, m);
  std::string_view alias = m.kind == kind::acknowledge ? "DSK"
                           : m.kind == kind::async     ? "DSA"
                                                       : "DSC";
  auto* t = doc.create<traits>(doc.resource());
  t->alias = alias;
  t->externalizable = true;
  auto* e = doc.external(t);
  e->layout = external_node::form::small_message;
  object_node* f = doc.object();
  e->payload = value::of(f);
  auto add = [&](std::string_view name, value v) {
    if (!v.is_null() && !v.is_undefined()) f->dynamic.push_back({name, v});
  };
  // An id that is a valid UUID goes as 16 bytes, anything else as a string.
  auto id = [&](std::string_view text, std::string_view as_text, std::string_view as_bytes) {
    if (text.empty()) return;
    if (auto b = uuid_bytes(text)) {
      add(as_bytes, value::of(doc.bytes(std::as_bytes(std::span(b->data(), b->size())))));
    } else {
      add(as_text, doc.string(text));
    }
  };
  add("body", m.body);
  if (m.client_id.kind() == type::string) id(m.client_id.as_string(), "clientId", "clientIdBytes");
  if (!m.destination.empty()) add("destination", doc.string(m.destination));
  add("headers", m.headers);
  id(m.message_id, "messageId", "messageIdBytes");
  if (m.timestamp != 0) add("timestamp", value::number(m.timestamp));
  if (m.time_to_live != 0) add("timeToLive", value::number(m.time_to_live));
  id(m.correlation_id, "correlationId", "correlationIdBytes");
  if (m.kind == kind::command) add("operation", value::integer(m.command));
  return value::of(e);
}

double now_ms() {
  using namespace std::chrono;
  return static_cast<double>(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

std::string new_uuid() {
  std::byte b[16];
  random_uuid(b);
  return uuid_text(b);
}

std::string_view new_uuid(document& doc) {
  std::byte b[16];
  random_uuid(b);
  char text[36];
  return doc.copy(std::string_view(text, uuid_chars(b, text)));
}

std::string uuid_text(std::span<const std::byte> bytes) {
  std::string s(bytes.size() * 2 + 4, '\0');
  s.resize(uuid_chars(bytes, s.data()));
  return s;
}

std::optional<std::string> uuid_bytes(std::string_view text) {
  if (text.size() != 36) return std::nullopt;
  std::string out;
  int hi = -1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return std::nullopt;
      continue;
    }
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    if (hi < 0) {
      hi = d;
    } else {
      out += static_cast<char>(hi * 16 + d);
      hi = -1;
    }
  }
  return out;
}

void collections_as_arrays(value& root) {
  auto is_collection = [](const value& v) {
    const external_node* e = v.as_external();
    return e && e->layout == external_node::form::single &&
           (e->cls->alias == array_collection_alias || e->cls->alias == array_list_alias);
  };
  std::vector<value*> todo{&root};
  std::unordered_set<const node*> seen;
  while (!todo.empty()) {
    value& v = *todo.back();
    todo.pop_back();
    while (is_collection(v)) v = v.as_external()->payload;
    node* n = v.as_node();
    if (!n || !seen.insert(n).second) continue;
    if (auto* o = v.as_object()) {
      for (auto& x : o->sealed) todo.push_back(&x);
      for (auto& m : o->dynamic) todo.push_back(&m.val);
    } else if (auto* a = v.as_array()) {
      for (auto& x : a->dense) todo.push_back(&x);
      for (auto& m : a->assoc) todo.push_back(&m.val);
    } else if (auto* vec = v.as_vector()) {
      for (auto& x : vec->objects) todo.push_back(&x);
    } else if (auto* d = v.as_dictionary()) {
      for (auto& e : d->entries) {
        todo.push_back(&e.key);
        todo.push_back(&e.val);
      }
    } else if (auto* e = v.as_external()) {
      todo.push_back(&e->payload);
      for (auto& op : e->ops) todo.push_back(&op.val);
    }
  }
}

void set_header(document& doc, message& m, std::string_view name, value v) {
  object_node* h = m.headers.as_object();
  if (!h) {
    h = doc.object();
    m.headers = value::of(h);
  }
  if (value* existing = h->find(name)) {
    *existing = v;
  } else {
    h->dynamic.push_back({doc.copy(name), v});
  }
}

}  // namespace amf::flex
