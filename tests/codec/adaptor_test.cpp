#include "amf/adaptor.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "corpus.hpp"

struct product {
  std::int32_t id = 0;
  std::string name;
  double price = 0;
  std::optional<std::string> note;
  std::vector<std::string> tags;
};
AMF_CLASS(product, "com.example.Product", id, name, price, note, tags);

namespace amf {
namespace {

template <class T>
std::optional<T> from(const value& v) {
  T out{};
  if (!adaptor<T>::from_value(v, out)) return std::nullopt;
  return out;
}

TEST(Adaptor, Numbers) {
  EXPECT_EQ(from<std::int32_t>(value::integer(7)), 7);
  EXPECT_EQ(from<std::int32_t>(value::number(7.0)), 7);  // Flash sends whole Numbers as doubles
  EXPECT_FALSE(from<std::int32_t>(value::number(7.5)));
  EXPECT_FALSE(from<std::int8_t>(value::integer(300)));
  EXPECT_FALSE(from<std::uint32_t>(value::integer(-1)));
  // 2^63 is one past int64_t (converting it is undefined behaviour): refused; so are 2^64 for
  // uint64_t, NaN and infinities. The largest doubles below are taken.
  EXPECT_FALSE(from<std::int64_t>(value::number(0x1p63)));
  EXPECT_EQ(from<std::int64_t>(value::number(0x1p62)), std::int64_t{1} << 62);
  EXPECT_EQ(from<std::int64_t>(value::number(-0x1p63)), std::numeric_limits<std::int64_t>::min());
  EXPECT_FALSE(from<std::int64_t>(value::number(-0x1p64)));
  EXPECT_FALSE(from<std::uint64_t>(value::number(0x1p64)));
  EXPECT_EQ(from<std::uint64_t>(value::number(0x1p63)), std::uint64_t{1} << 63);
  EXPECT_FALSE(from<std::int32_t>(value::number(0x1p31)));
  EXPECT_EQ(from<std::int32_t>(value::number(-0x1p31)), std::numeric_limits<std::int32_t>::min());
  EXPECT_FALSE(from<std::int64_t>(value::number(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_FALSE(from<std::int64_t>(value::number(std::numeric_limits<double>::infinity())));
  EXPECT_EQ(from<double>(value::integer(3)), 3.0);
  EXPECT_FALSE(from<double>(value::boolean(true)));
  document doc;
  EXPECT_EQ(adaptor<std::int64_t>::to_value(doc, 1).kind(), type::integer);
  EXPECT_EQ(adaptor<std::int64_t>::to_value(doc, std::int64_t{1} << 40).kind(), type::number);
}

TEST(Adaptor, StringsOptionalsVectorsMapsDates) {
  document doc;
  EXPECT_EQ(from<std::string>(doc.string("x")), "x");
  EXPECT_FALSE(from<std::string>(value::null()));
  auto absent = from<std::optional<std::string>>(value::null());
  ASSERT_TRUE(absent);    // converted,
  EXPECT_FALSE(*absent);  // to nothing
  array_node* a = doc.array();
  a->dense = {value::integer(1), value::number(2)};
  EXPECT_EQ(from<std::vector<int>>(value::of(a)), (std::vector<int>{1, 2}));
  object_node* o = doc.object();
  o->dynamic.push_back({"k", value::integer(5)});
  auto m = from<std::map<std::string, int>>(value::of(o));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->at("k"), 5);
  using clock = std::chrono::system_clock;
  auto t = from<clock::time_point>(doc.date(1500.0));
  ASSERT_TRUE(t);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count(),
            1500);
  value back = adaptor<clock::time_point>::to_value(doc, *t);
  EXPECT_EQ(back.as_date()->millis, 1500.0);
}

TEST(Adaptor, DeclaredClassRoundTrip) {
  document doc;
  product p{7, "lamp", 19.5, std::nullopt, {"red", "new"}};
  value v = adaptor<product>::to_value(doc, p);
  std::string bytes;
  encode_amf3(v, bytes);
  document doc2;
  value back = decode_amf3(test::bytes(bytes), doc2);
  auto* o = back.as_object();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cls->alias, "com.example.Product");
  ASSERT_EQ(o->cls->sealed.size(), 5u);
  EXPECT_EQ(o->cls->sealed[1], "name");
  EXPECT_FALSE(o->cls->dynamic);
  auto q = from<product>(back);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->id, 7);
  EXPECT_EQ(q->name, "lamp");
  EXPECT_EQ(q->tags, p.tags);
  EXPECT_FALSE(q->note);
  // A member of the wrong type does not convert.
  o->sealed[0] = doc2.string("seven");
  EXPECT_FALSE(from<product>(back));
}

// How Ruffle writes an AS3 Array: an AMF0 ECMA array keyed "0".."n-1".
value ecma(document& doc, std::initializer_list<value> items) {
  auto* a = doc.create<array_node>(type::ecma_array, doc.resource());
  for (const auto& v : items) a->assoc.push_back({doc.copy(std::to_string(a->assoc.size())), v});
  return value::of(a);
}

TEST(Adaptor, DenseEcmaArraysAreLists) {
  document doc;
  EXPECT_EQ(from<std::vector<std::string>>(ecma(doc, {doc.string("a"), doc.string("b")})),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(from<std::vector<int>>(ecma(doc, {})), std::vector<int>{});
  // Any other key makes it associative: not a list.
  auto* sparse = doc.create<array_node>(type::ecma_array, doc.resource());
  sparse->assoc.push_back({"0", value::integer(1)});
  sparse->assoc.push_back({"2", value::integer(2)});
  EXPECT_FALSE(from<std::vector<int>>(value::of(sparse)));
  EXPECT_FALSE(as_list(value::of(sparse)));
  auto* named = doc.create<array_node>(type::ecma_array, doc.resource());
  named->assoc.push_back({"length", value::integer(1)});
  EXPECT_FALSE(as_list(value::of(named)));
}

TEST(Adaptor, FlexCollectionsOut) {
  document doc;
  const value v = adaptor<array_collection<std::int32_t>>::to_value(doc, {1, 2, 3});
  const external_node* e = v.as_external();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->cls->alias, "flex.messaging.io.ArrayCollection");
  EXPECT_TRUE(e->cls->externalizable);
  // As a Flex client reads it: encoded and decoded with the built-in class codecs.
  std::string bytes;
  encode_amf3(v, bytes);
  document back;
  decode_options opt;
  opt.classes = &class_registry::builtin();
  const value read = decode_amf3(test::bytes(bytes), back, opt);
  EXPECT_EQ(from<std::vector<std::int32_t>>(read), (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(from<array_list<std::int32_t>>(read), (array_list<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(adaptor<array_list<std::string>>::to_value(doc, {"x"}).as_external()->cls->alias,
            "flex.messaging.io.ArrayList");
}

TEST(Adaptor, AFailureRecordsThePathToTheMember) {
  document doc;
  object_node* p = doc.object();  // anonymous, as Ruffle sends a class instance
  p->dynamic.push_back({"id", value::integer(1)});
  p->dynamic.push_back({"name", doc.string("lamp")});
  p->dynamic.push_back({"price", value::number(2)});
  p->dynamic.push_back({"tags", ecma(doc, {doc.string("a"), value::integer(5)})});
  array_node* list = doc.array();
  list->dense.push_back(value::of(doc.object()));  // an empty object: no product either
  list->dense.push_back(value::of(p));
  conversion_failure::clear();
  EXPECT_FALSE(from<std::vector<product>>(value::of(list)));
  const auto& f = conversion_failure::last();
  ASSERT_TRUE(f.set);
  EXPECT_EQ(f.where(), "[0].id");  // the first member that fails: id is missing
  EXPECT_EQ(f.expected, "int");
  EXPECT_TRUE(f.got.is_undefined());

  list->dense.erase(list->dense.begin());
  conversion_failure::clear();
  EXPECT_FALSE(from<std::vector<product>>(value::of(list)));
  EXPECT_EQ(conversion_failure::last().where(), "[0].tags[1]");
  EXPECT_EQ(conversion_failure::last().got.kind(), type::integer);
  // A map names its key.
  object_node* m = doc.object();
  m->dynamic.push_back({"ok", value::integer(1)});
  m->dynamic.push_back({"bad", doc.string("x")});
  conversion_failure::clear();
  EXPECT_FALSE((from<std::map<std::string, int>>(value::of(m))));
  EXPECT_EQ(conversion_failure::last().where(), "bad");
}

}  // namespace
}  // namespace amf
