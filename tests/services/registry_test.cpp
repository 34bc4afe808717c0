#include "amfgate/services/registry.hpp"

#include <gtest/gtest.h>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/json.hpp"
#include "amfgate/services/builtin.hpp"

struct user {
  std::int32_t id = 0;
  std::string name;
};
AMF_CLASS(user, "com.example.User", id, name);

namespace amfgate::services {
namespace {

amf::value call(registry& r, std::string_view s, std::string_view m, std::vector<amf::value> args,
                amf::document& doc) {
  const method* found = r.find(s, m);
  if (!found) throw std::runtime_error("not bound");
  call_context ctx(s, m, doc);
  return found->invoke(ctx, args);
}

TEST(Registry, BindsBySignatureAndConvertsArguments) {
  registry r;
  r.bind("Math", "add", [](std::int32_t a, double b) { return a + b; });
  r.bind("Users", "get", [](std::int32_t id) { return user{id, "ann"}; });
  r.bind("Users", "rename", [](user u, std::string name) {
    u.name = name;
    return u;
  });
  amf::document doc;
  EXPECT_EQ(
      call(r, "Math", "add", {amf::value::integer(2), amf::value::number(0.5)}, doc).as_double(),
      2.5);
  amf::value u = call(r, "Users", "get", {amf::value::number(7)}, doc);
  ASSERT_NE(u.as_object(), nullptr);
  EXPECT_EQ(u.as_object()->cls->alias, "com.example.User");
  amf::value renamed = call(r, "Users", "rename", {u, doc.string("bob")}, doc);
  EXPECT_EQ(renamed.as_object()->find("name")->as_string(), "bob");
  EXPECT_EQ(renamed.as_object()->find("id")->as_int(), 7);
}

TEST(Registry, MismatchesAreFaultsThatNameEverything) {
  registry r;
  r.bind("UserService", "getUser", [](std::int32_t id) { return id; });
  amf::document doc;
  try {
    call(r, "UserService", "getUser", {doc.string("x")}, doc);
    FAIL();
  } catch (const fault& f) {
    EXPECT_EQ(f.code(), "Server.ResourceUnavailable");
    EXPECT_STREQ(f.what(), "UserService.getUser: argument 1: expected int, got string");
  }
  try {
    call(r, "UserService", "getUser", {amf::value::integer(1), amf::value::integer(2)}, doc);
    FAIL();
  } catch (const fault& f) {
    EXPECT_STREQ(f.what(), "UserService.getUser: expected 1 argument, got 2");
  }
  // A missing trailing argument is undefined: fine for an optional, a fault otherwise.
  r.bind("S", "opt", [](std::optional<std::string> s) { return s.value_or("none"); });
  EXPECT_EQ(call(r, "S", "opt", {}, doc).as_string(), "none");
  EXPECT_THROW(call(r, "UserService", "getUser", {}, doc), fault);
}

class counter {
 public:
  int add(int n) { return total_ += n; }
  int total() const { return total_; }

 private:
  int total_ = 0;
};

TEST(Registry, MemberFunctionsContextAndVoid) {
  registry r;
  counter c;
  r.bind("Counter", "add", &counter::add, &c);
  r.bind("Counter", "total", &counter::total, &c);
  std::string seen;
  r.bind("Audit", "who", [&seen](call_context& ctx, std::string what) {
    seen = std::string(ctx.service) + "." + std::string(ctx.method) + ":" + what;
  });
  amf::document doc;
  call(r, "Counter", "add", {amf::value::integer(3)}, doc);
  EXPECT_EQ(call(r, "Counter", "total", {}, doc).as_int(), 3);
  EXPECT_TRUE(call(r, "Audit", "who", {doc.string("x")}, doc).is_null());
  EXPECT_EQ(seen, "Audit.who:x");
  EXPECT_EQ(r.find("Audit", "who")->parameters, std::vector<std::string>{"string"});
  EXPECT_EQ(r.find("Counter", "add")->result, "int");
}

TEST(Registry, DuplicatesAndBindingAfterStartAreErrors) {
  registry r;
  r.bind("S", "m", [] { return 1; });
  EXPECT_THROW(r.bind("S", "m", [] { return 2; }), std::logic_error);
  r.freeze();
  EXPECT_THROW(r.bind("S", "other", [] { return 2; }), std::logic_error);
}

TEST(Builtin, EchoReturnsTheValueItselfAndIntrospectionDescribes) {
  registry r;
  add_echo_service(r);
  add_introspection_service(r);
  amf::document doc;
  amf::object_node* o = doc.object();
  amf::value v = amf::value::of(o);
  EXPECT_EQ(call(r, "EchoService", "echo", {v}, doc).as_node(), o);
  EXPECT_EQ(call(r, "Red5Echo", "echo", {v}, doc).as_node(), o);
  EXPECT_NE(r.classes().find("org.red5.demos.echo.ExternalizableClass"), nullptr);
  EXPECT_NE(r.classes().find("org.red5.server.webapp.echo.ExternalizableClass"), nullptr);
  amf::value all = call(r, "amfgate.Introspection", "listServices", {}, doc);
  ASSERT_NE(all.as_array(), nullptr);
  EXPECT_EQ(all.as_array()->dense.size(), 3u);
  amf::value echo =
      call(r, "amfgate.Introspection", "describeService", {doc.string("EchoService")}, doc);
  auto* methods = echo.as_object()->find("methods")->as_array();
  EXPECT_EQ(methods->dense[0].as_object()->find("name")->as_string(), "echo");
  EXPECT_THROW(call(r, "amfgate.Introspection", "describeService", {doc.string("Nope")}, doc),
               fault);
}

TEST(Builtin, Red5ExternalizableClassPayloadRoundTrips) {
  registry r;
  add_echo_service(r);
  amf::decode_options o;
  o.classes = &r.classes();
  // writeExternal of the Red5 echo client: booleans, bytes, double, float, ints, the
  // multibyte strings in iso-8859-1 and utf-8, a nested AMF3 array, shorts, uints, UTF.
  const std::string in = amf::json::from_hex(
      "0a074f6f72672e726564352e64656d6f732e6563686f2e45787465726e616c697a61626c65436c617373"
      "010000ff017f813ff00000000000004000000000000000ffffffff00000001"
      "e4f6fcc4d6dcdfc3a4c3b6c3bcc384c396c39cc39f"
      "09070104030607"
      "6f6e65053ff0000000000000"
      "0000ffff00010000000000000001000c48656c6c6f20776f726c642148656c6c6f20776f726c6421");
  amf::document doc;
  amf::value v = amf::decode_amf3(amf::as_bytes(in), doc, o);
  const amf::external_node* e = v.as_external();
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->ops.size(), red5_externalizable_layout().size());
  EXPECT_EQ(e->ops[12].val.as_string(), e->ops[13].val.as_string());  // the same text twice
  EXPECT_EQ(e->ops[21].val.as_string(), "Hello world!");
  std::string out;
  amf::encode_amf3(v, out);
  EXPECT_EQ(out, in);
  // The older alias reads the same way.
  EXPECT_EQ(r.classes().find("org.red5.server.webapp.echo.ExternalizableClass"),
            r.classes().find("org.red5.demos.echo.ExternalizableClass"));
}

}  // namespace
}  // namespace amfgate::services
