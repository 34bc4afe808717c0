#include "amf/json.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

using json::ordered_json;

TEST(Json, NonFiniteAndNegativeZeroDoubles) {
  json::writer w;
  EXPECT_EQ(w.amf3(value::number(-0.0)), ordered_json::parse(R"({"$double":"-0.0"})"));
  EXPECT_EQ(w.amf3(value::number(HUGE_VAL)), ordered_json::parse(R"({"$double":"Infinity"})"));
  const double odd_nan = std::bit_cast<double>(0x7fffffffffffffffull);
  EXPECT_EQ(w.amf3(value::number(odd_nan)),
            ordered_json::parse(R"({"$double":"NaN","$bits":"7fffffffffffffff"})"));
  document doc;
  json::reader r(doc);
  value back = r.amf3(w.amf3(value::number(odd_nan)));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(back.as_double()), 0x7fffffffffffffffull);
}

TEST(Json, StringsThatAreNotUtf8AndDollarNames) {
  document doc;
  object_node* o = doc.object();
  o->dynamic.push_back({"$x", value::string("\xff")});
  json::writer w;
  const auto j = w.amf3(value::of(o));
  EXPECT_EQ(j, ordered_json::parse(R"({"$$x":{"$badutf8":"ff"}})"));
  json::reader r(doc);
  value back = r.amf3(j);
  EXPECT_EQ(back.as_object()->dynamic[0].name, "$x");
  EXPECT_EQ(back.as_object()->dynamic[0].val.as_string(), "\xff");
}

TEST(Json, ReferencesFollowTheTableInForce) {
  // AMF0 [o, o] inside a request: the argument array is not counted, so o is 0.
  const auto j = ordered_json::parse(R"([{"a":1.0},{"$ref":0}])");
  document doc;
  json::reader r(doc);
  value v = r.amf0_arguments(j);
  auto* a = v.as_array();
  EXPECT_EQ(a->dense[0].as_node(), a->dense[1].as_node());
  std::string out;
  encoder e(out);
  e.write_amf0_arguments(v);
  EXPECT_EQ(json::to_hex(test::bytes(out)),
            "0a0000000203000161003ff000000000000000000907"
            "0000");
  json::writer w;
  EXPECT_EQ(w.amf0_arguments(v), j);
}

TEST(Json, ErrorsNameTheirPath) {
  document doc;
  json::reader r(doc);
  try {
    r.amf3(ordered_json::parse(R"({"a":[1.0,{"$ref":7}]})"));
    FAIL() << "no error";
  } catch (const json::error& e) {
    EXPECT_STREQ(e.what(), "/a/1/$ref: reference 7 beyond the table");
  }
  EXPECT_THROW(r.amf3(ordered_json::parse(R"({"$nope":1})")), json::error);
  EXPECT_THROW(json::from_hex("0g"), json::error);
}

// Integers out of their field's range are refused, not converted (fuzz_json: {"$int": 3e105}
// was a double converted to int32_t, undefined behaviour).
TEST(Json, IntegersOutOfRangeAreErrors) {
  document doc;
  json::reader r(doc);
  try {
    r.amf3(ordered_json::parse(R"([{"$int": 3e105}])"));
    FAIL() << "no error";
  } catch (const json::error& e) {
    EXPECT_STREQ(e.what(),
                 "/0/$int: expected an integer from -2147483648 to 2147483647, got 3e+105");
  }
  EXPECT_THROW(r.amf3(ordered_json::parse(R"({"$int": 4294967296})")), json::error);
  EXPECT_THROW(r.amf3(ordered_json::parse(R"({"$ref": -1})")), json::error);
  EXPECT_THROW(r.amf0(ordered_json::parse(R"({"$date": 0.0, "$tz": 40000})")), json::error);
  // An ECMA array's count is a u32 (a double past it was converted undefined: fuzz_json).
  EXPECT_THROW(r.amf0(ordered_json::parse(R"({"$ecma": {}, "$count": 1e83})")), json::error);
  EXPECT_THROW(r.amf0(ordered_json::parse(R"({"$ecma": {}, "$count": -1})")), json::error);
  EXPECT_EQ(r.amf0(ordered_json::parse(R"({"$ecma": {}, "$count": 7})")).as_array()->ecma_count,
            7u);
  EXPECT_EQ(r.amf3(ordered_json::parse(R"({"$int": -5})")).as_int(), -5);
}

TEST(Json, EveryKindRoundTripsThroughJson) {
  for (const char* file :
       {"rocketamf/objects/amf3-dictionary.bin", "rocketamf/objects/amf3-vector-object.bin",
        "rocketamf/objects/amf3-complex-array-collection.bin",
        "rocketamf/objects/amf3-xml-ref.bin"}) {
    const std::string in = read_file(shared_dir() + "/corpus/" + file);
    document doc;
    value v = decode_amf3(test::bytes(in), doc);
    json::writer w;
    const auto j = w.amf3(v);
    document doc2;
    json::reader r(doc2);
    value back = r.amf3(ordered_json::parse(j.dump()));
    EXPECT_TRUE(equivalent(v, back)) << file;
  }
}

}  // namespace
}  // namespace amf::test
