#include "amf/value.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace amf {
namespace {

TEST(Value, HandlesAreSmallAndTriviallyCopyable) {
  static_assert(sizeof(value) == 16);
  static_assert(std::is_trivially_copyable_v<value>);
  EXPECT_TRUE(value().is_undefined());
  EXPECT_EQ(value::integer(-5).to_double(), -5.0);
  EXPECT_EQ(type_name(type::vector_uint), "vector of uint");
}

TEST(Value, BuildersCopyIntoTheArena) {
  document doc;
  std::string text = "hello";
  value s = doc.string(text);
  text[0] = 'j';
  EXPECT_EQ(s.as_string(), "hello");
  const traits* t = doc.make_traits("com.example.User", false, {"id", "name"});
  object_node* o = doc.object(t);
  ASSERT_EQ(o->sealed.size(), 2u);
  o->sealed[1] = doc.string("ann");
  EXPECT_EQ(o->find("name")->as_string(), "ann");
  EXPECT_EQ(o->find("missing"), nullptr);
  EXPECT_EQ(doc.object()->cls, doc.object()->cls);  // anonymous traits are shared
}

TEST(Value, EquivalenceComparesSharingAndBits) {
  document doc;
  object_node* o = doc.object();
  array_node* shared = doc.array();
  shared->dense = {value::of(o), value::of(o)};
  array_node* apart = doc.array();
  apart->dense = {value::of(doc.object()), value::of(doc.object())};
  EXPECT_TRUE(equivalent(value::of(shared), value::of(shared)));
  EXPECT_FALSE(equivalent(value::of(shared), value::of(apart)));
  EXPECT_FALSE(equivalent(value::number(0.0), value::number(-0.0)));
  EXPECT_TRUE(equivalent(value::number(std::nan("")), value::number(std::nan(""))));
  EXPECT_FALSE(equivalent(value::integer(1), value::number(1.0)));
  EXPECT_TRUE(equivalent(doc.date(5, 300), doc.date(5, 0)));
  EXPECT_FALSE(equivalent(doc.date(5, 300), doc.date(5, 0), true));
}

}  // namespace
}  // namespace amf
