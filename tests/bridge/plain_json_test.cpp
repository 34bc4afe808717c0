// The bridge's plain JSON (bridge/plain_json.hpp) on its own: each rule both ways, and what
// it refuses (cycles, depth, amplification), with the path of the offending element.
#include "amfgate/bridge/plain_json.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "amf/decode.hpp"
#include "amf/encode.hpp"

namespace amfgate::bridge {
namespace {

using json = ordered_json;

TEST(PlainJson, EachAmfTypeAsABackendWouldWriteIt) {
  amf::document doc;
  amf::traits* t = doc.make_traits("com.example.User", false, {"id", "name"});
  amf::object_node* user = doc.object(t);
  user->sealed = {amf::value::integer(7), doc.string("Ann")};
  amf::object_node* anon = doc.object();
  anon->dynamic.push_back({"born", doc.date(0.0)});
  const std::byte raw[] = {std::byte{0}, std::byte{1}, std::byte{0xfe}};
  anon->dynamic.push_back({"avatar", amf::value::of(doc.bytes(raw))});
  anon->dynamic.push_back({"xml", amf::value::of(doc.xml(amf::type::xml, "<a/>"))});
  anon->dynamic.push_back({"ratio", amf::value::number(2.5)});
  anon->dynamic.push_back({"count", amf::value::number(3.0)});  // AMF0's 3
  anon->dynamic.push_back({"nan", amf::value::number(std::nan(""))});
  anon->dynamic.push_back({"user", amf::value::of(user)});
  EXPECT_EQ(to_plain(amf::value::of(anon)).dump(),
            R"({"born":"1970-01-01T00:00:00.000Z","avatar":{"_bytes":"AAH+"},"xml":"<a/>",)"
            R"("ratio":2.5,"count":3,"nan":null,"user":{"_explicitType":"com.example.User",)"
            R"("id":7,"name":"Ann"}})");

  // Ruffle's arrays (dense ECMA arrays) are arrays; any other key makes an object.
  auto* ecma = doc.create<amf::array_node>(amf::type::ecma_array, doc.resource());
  ecma->assoc.push_back({"0", amf::value::integer(1)});
  ecma->assoc.push_back({"1", amf::value::integer(2)});
  EXPECT_EQ(to_plain(amf::value::of(ecma)).dump(), "[1,2]");
  ecma->assoc.push_back({"key", amf::value::null()});
  EXPECT_EQ(to_plain(amf::value::of(ecma)).dump(), R"({"0":1,"1":2,"key":null})");
}

TEST(PlainJson, TheBackendsJsonBecomesTypedObjectsDatesAndBytes) {
  amf::document doc;
  const auto v = from_plain(doc, json::parse(R"({"_explicitType": "com.example.User", "id": 7,
      "big": 1000000000, "joined": {"_date": "2019-03-04T10:00:00+01:00"},
      "at": {"_date": 1000}, "avatar": {"_bytes": "AAH+"}, "plain": "2019-03-04T09:00:00Z"})"));
  const auto* o = v.as_object();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->cls->alias, "com.example.User");
  EXPECT_EQ(o->cls->sealed.size(), 6u);
  EXPECT_EQ(o->find("id")->kind(), amf::type::integer);
  EXPECT_EQ(o->find("big")->kind(), amf::type::number);  // past AMF3's 29 bits
  EXPECT_EQ(o->find("joined")->as_date()->millis, 1551690000000.0);
  EXPECT_EQ(o->find("at")->as_date()->millis, 1000.0);
  EXPECT_EQ(o->find("avatar")->as_bytes()->bytes.size(), 3u);
  EXPECT_EQ(o->find("plain")->kind(), amf::type::string);  // a string stays a string
  // It encodes as Flash reads a [RemoteClass], and maps back as it came, dates as ISO text.
  std::string bytes;
  amf::encode_amf3(v, bytes);
  amf::document doc2;
  amf::decode_error ec;
  const auto back = amf::decode_amf3(amf::as_bytes(bytes), doc2, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(to_plain(back)["joined"], "2019-03-04T09:00:00.000Z");
  EXPECT_EQ(to_plain(back)["_explicitType"], "com.example.User");
}

TEST(PlainJson, WhatItRefusesSaysWhere) {
  amf::document doc;
  // A cycle: an object that holds itself.
  amf::object_node* a = doc.object();
  amf::array_node* list = doc.array();
  list->dense.push_back(amf::value::of(a));
  a->dynamic.push_back({"items", amf::value::of(list)});
  try {
    (void)to_plain(amf::value::of(a));
    ADD_FAILURE() << "a cycle mapped";
  } catch (const mapping_error& e) {
    EXPECT_STREQ(e.what(), "/items/0: a cycle: an object holds itself");
  }
  // Shared, not cyclic: written at each place.
  amf::object_node* b = doc.object();
  b->dynamic.push_back({"x", amf::value::integer(1)});
  amf::array_node* twice = doc.array();
  twice->dense = {amf::value::of(b), amf::value::of(b)};
  EXPECT_EQ(to_plain(amf::value::of(twice)).dump(), R"([{"x":1},{"x":1}])");
  // Amplification: one 1 KB string referenced 10,000 times is 10 MB of JSON.
  const std::string kb(1024, 'x');
  amf::array_node* many = doc.array();
  for (int i = 0; i < 10'000; ++i) many->dense.push_back(doc.string(kb));
  EXPECT_THROW((void)to_plain(amf::value::of(many), {128, 1 << 20}), mapping_error);
  // The same, spread over a call's arguments: one budget holds for all of them.
  amf::array_node* some = doc.array();
  for (int i = 0; i < 600; ++i) some->dense.push_back(doc.string(kb));
  plain_writer call({128, 1 << 20});
  EXPECT_EQ(call.render(amf::value::of(some)).size(), 600u);
  EXPECT_THROW((void)call.render(amf::value::of(some)), mapping_error);
  EXPECT_EQ(to_plain(amf::value::of(some), {128, 1 << 20}).size(), 600u);
  // Depth, both ways.
  amf::value deep = amf::value::null();
  for (int i = 0; i < 200; ++i) {
    amf::array_node* n = doc.array();
    n->dense.push_back(deep);
    deep = amf::value::of(n);
  }
  EXPECT_THROW((void)to_plain(deep), mapping_error);
  std::string nested = std::string(200, '[') + std::string(200, ']');
  EXPECT_THROW((void)from_plain(doc, json::parse(nested)), mapping_error);
  try {
    (void)from_plain(doc, json::parse(R"({"a": [1, {"_bytes": "!!"}]})"));
    ADD_FAILURE() << "bad base64 mapped";
  } catch (const mapping_error& e) {
    EXPECT_STREQ(e.what(), "/a/1: _bytes: expected a base64 string");
  }
  EXPECT_THROW((void)from_plain(doc, json::parse(R"({"_date": "yesterday"})")), mapping_error);
  EXPECT_THROW((void)from_plain(doc, json::parse(R"({"_explicitType": 7})")), mapping_error);
  EXPECT_THROW((void)from_plain(doc, json::parse(R"({"": 1})")), mapping_error);
}

TEST(PlainJson, IsoDatesAtTheEdges) {
  EXPECT_EQ(iso8601(-1.0), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(iso8601(951782400000.0), "2000-02-29T00:00:00.000Z");
  EXPECT_EQ(iso8601(1e300), "");  // not a date Flash can hold
  EXPECT_EQ(iso8601(std::nan("")), "");
  EXPECT_EQ(parse_iso8601("2000-02-29"), 951782400000.0);
  EXPECT_EQ(parse_iso8601("1969-12-31T23:59:59.999Z"), -1.0);
  EXPECT_EQ(parse_iso8601("2000-02-29T01:00:00+01:00"), 951782400000.0);
  EXPECT_FALSE(parse_iso8601("2000-13-01"));
  EXPECT_FALSE(parse_iso8601("2000-02-29T00:00:00Zjunk"));
  EXPECT_FALSE(parse_iso8601("tomorrow"));
}

}  // namespace
}  // namespace amfgate::bridge
