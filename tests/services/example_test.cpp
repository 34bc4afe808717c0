// The README's example service, called as a client would call it.
#include "../../examples/services/user_service.hpp"

#include <gtest/gtest.h>

namespace {

amf::value call(amfgate::services::registry& r, std::string_view s, std::string_view m,
                std::vector<amf::value> args, amf::document& doc) {
  amfgate::services::call_context ctx(s, m, doc);
  return r.find(s, m)->invoke(ctx, args);
}

TEST(ExampleService, SaveGetListAndFaults) {
  amfgate::services::registry r;
  UserService users;
  bind_services(r, users);
  amf::document doc;
  // A Flex client's com.example.User, sealed members in any order it likes.
  const amf::traits* t =
      doc.make_traits("com.example.User", false, {"name", "id", "roles", "created", "email"});
  amf::object_node* u = doc.object(t);
  u->sealed[0] = doc.string("ann");
  u->sealed[1] = amf::value::integer(7);
  amf::array_node* roles = doc.array();
  roles->dense.push_back(doc.string("admin"));
  u->sealed[2] = amf::value::of(roles);
  u->sealed[3] = doc.date(1700000000000.0);
  u->sealed[4] = amf::value::null();
  call(r, "UserService", "save", {amf::value::of(u)}, doc);

  amf::value got = call(r, "UserService", "getUser", {amf::value::number(7)}, doc);
  auto* o = got.as_object();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cls->alias, "com.example.User");
  EXPECT_EQ(o->cls->sealed[0], "id");
  EXPECT_EQ(o->find("name")->as_string(), "ann");
  EXPECT_TRUE(o->find("email")->is_null());
  EXPECT_EQ(o->find("created")->as_date()->millis, 1700000000000.0);
  const amf::value all = call(r, "UserService", "list", {}, doc);
  ASSERT_NE(all.as_external(), nullptr);
  EXPECT_EQ(all.as_external()->cls->alias, "flex.messaging.io.ArrayCollection");
  EXPECT_EQ(all.as_external()->payload.as_array()->dense.size(), 1u);
  EXPECT_EQ(call(r, "UserService", "whoami", {}, doc).as_string(), "anonymous");
  try {
    call(r, "UserService", "getUser", {amf::value::integer(8)}, doc);
    FAIL();
  } catch (const amfgate::services::fault& f) {
    EXPECT_EQ(f.code(), "User.NotFound");
  }
}

}  // namespace
