#include "amf/encode.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "amf/decode.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

std::string amf3_hex(const value& v) {
  std::string out;
  encode_amf3(v, out);
  return json::to_hex(bytes(out));
}
std::string amf0_hex(const value& v) {
  std::string out;
  encode_amf0(v, out);
  return json::to_hex(bytes(out));
}

TEST(Encode, U29WidthsAndTheFallBackToDouble) {
  const std::pair<std::int32_t, const char*> cases[] = {
      {0, "0400"},
      {127, "047f"},
      {128, "048100"},
      {16383, "04ff7f"},
      {16384, "04818000"},
      {2097151, "04ffff7f"},
      {2097152, "0480c08000"},
      {268435455, "04bfffffff"},
      {-1, "04ffffffff"},
      {-268435456, "04c0808000"},
      {268435456, "0541b0000000000000"},   // 2^28: a double
      {-268435457, "05c1b0000001000000"},  // below -2^28: a double
  };
  for (auto [i, expected] : cases) EXPECT_EQ(amf3_hex(value::integer(i)), expected) << i;
  // AMF0 has no integer.
  EXPECT_EQ(amf0_hex(value::integer(1)), "003ff0000000000000");
}

TEST(Encode, DoublesBitForBit) {
  EXPECT_EQ(amf3_hex(value::number(-0.0)), "058000000000000000");
  EXPECT_EQ(amf3_hex(value::number(std::numeric_limits<double>::denorm_min())),
            "050000000000000001");
  EXPECT_EQ(amf0_hex(value::number(-std::numeric_limits<double>::infinity())),
            "00fff0000000000000");
}

TEST(Encode, StringReferencesButNeverForTheEmptyString) {
  document doc;
  array_node* a = doc.array();
  for (auto s : {"", "", "a", "a"}) a->dense.push_back(doc.string(s));
  EXPECT_EQ(amf3_hex(value::of(a)), "090901060106010603610600");
}

// In AMF3 an empty member name ends an object's members: such a member is left out (fuzz_json
// built {"": 615}, whose encoding did not decode). AMF0 tells the end by the marker after it,
// and keeps the member (RocketAMF's amf0-empty-string-key-hash fixture has one).
TEST(Encode, MembersNamedEmptyAreLeftOut) {
  document doc;
  object_node* o = doc.object();
  o->dynamic.push_back({"", value::number(615)});
  o->dynamic.push_back({"a", value::integer(1)});
  EXPECT_EQ(amf0_hex(value::of(o)), "030000004083380000000000000161003ff0000000000000000009");
  EXPECT_EQ(amf3_hex(value::of(o)), "0a0b010361040101");
}

TEST(Encode, ObjectAndTraitReferences) {
  document doc;
  const traits* t = doc.make_traits("", false, {"a"});
  object_node* o1 = doc.object(t);
  object_node* o2 = doc.object(t);
  o1->sealed[0] = value::integer(1);
  o2->sealed[0] = value::integer(2);
  array_node* a = doc.array();
  for (auto* o : {o1, o2, o1}) a->dense.push_back(value::of(o));
  // o1 inline with its traits, o2 by trait reference 0 (01), o1 again as object ref 1 (02).
  EXPECT_EQ(amf3_hex(value::of(a)),
            "0907010a130103610401"
            "0a010402"
            "0a02");
}

TEST(Encode, EqualButDistinctObjectsAreNotMerged) {
  document doc;
  array_node* a = doc.array();
  a->dense.push_back(value::of(doc.object()));
  a->dense.push_back(value::of(doc.object()));
  EXPECT_EQ(amf3_hex(value::of(a)),
            "0905010a0b0101"
            "0a0101");
}

TEST(Encode, SelfReference) {
  document doc;
  object_node* o = doc.object();
  o->dynamic.push_back({"self", value::of(o)});
  EXPECT_EQ(amf3_hex(value::of(o)), "0a0b010973656c660a0001");
  EXPECT_EQ(amf0_hex(value::of(o)),
            "03000473656c660700000000"
            "09");
}

TEST(Encode, Amf0DateRepeatedIsAReferenceAndArgumentsAreNotCounted) {
  document doc;
  value d = doc.date(std::bit_cast<double>(0x42723ecc0a000000ull), 0x01a4);
  array_node* a = doc.array();
  a->dense = {d, d};
  std::string out;
  encoder e(out);
  e.write_amf0_arguments(value::of(a));
  // The capture of Flash Player's [d, d] argument.
  EXPECT_EQ(json::to_hex(bytes(out)),
            "0a00000002"
            "0b42723ecc0a00000001a4"
            "070000");
}

// Short strings are copied in overlapping pieces, by length: every length up to past the
// longest such piece comes out whole, in AMF0 and AMF3.
TEST(Encode, StringsOfEveryShortLength) {
  const std::string text = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (std::size_t n = 0; n <= 20; ++n) {
    const std::string s = text.substr(n % 7, n);
    std::string len0 = {static_cast<char>(0x02), '\0', static_cast<char>(n)};
    EXPECT_EQ(amf0_hex(value::string(s)), json::to_hex(bytes(len0 + s))) << n;
    std::string len3 = {static_cast<char>(0x06), static_cast<char>(n << 1 | 1)};
    EXPECT_EQ(amf3_hex(value::string(s)), json::to_hex(bytes(len3 + s))) << n;
  }
}

TEST(Encode, Amf0LongStringsAndTheSwitchToAmf3) {
  document doc;
  EXPECT_EQ(amf0_hex(doc.string("hi").with_flags(value::long_string)), "0c000000026869");
  std::string big(70000, 'x');
  std::string out;
  encode_amf0(value::string(big), out);
  EXPECT_EQ(json::to_hex(bytes(out.substr(0, 5))), "0c00011170");
  const std::byte raw[] = {std::byte{1}, std::byte{2}};
  EXPECT_EQ(amf0_hex(value::of(doc.bytes(raw))), "110c050102");
  EXPECT_EQ(amf0_hex(value::null().with_flags(value::avmplus)), "1101");
}

TEST(Encode, RoundTripOfEveryKind) {
  // A value holding every kind, shared and cyclic, through AMF3 and back.
  const std::string in =
      test::read_file(shared_dir() + "/corpus/rocketamf/objects/amf3-dictionary.bin");
  document doc;
  value v = decode_amf3(bytes(in), doc);
  std::string out;
  encode_amf3(v, out);
  EXPECT_EQ(out, in);
  document doc2;
  EXPECT_TRUE(equivalent(decode_amf3(bytes(out), doc2), v));
}

// Thousands of nodes, each written twice: first when met, then as a reference, whether the
// second time comes long after (the second half) or soon after (every third node, again right
// away). Decoded, the two places hold one node, in AMF3 and in AMF0.
TEST(Encode, ReferencesAmongThousandsOfNodes) {
  constexpr int n = 3000;
  document doc;
  std::vector<value> nodes;
  for (int i = 0; i < n; ++i) {
    if (i % 2) {
      object_node* o = doc.object();
      o->dynamic.push_back({"i", value::number(i)});
      nodes.push_back(value::of(o));
    } else {
      nodes.push_back(doc.date(i));
    }
  }
  array_node* a = doc.array();
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    order.push_back(i);
    if (i % 3 == 0) order.push_back(i);
  }
  for (int i = 0; i < n; ++i) order.push_back(i);
  for (int i : order) a->dense.push_back(nodes[static_cast<std::size_t>(i)]);
  for (bool amf3 : {true, false}) {
    std::string out;
    amf3 ? encode_amf3(value::of(a), out) : encode_amf0(value::of(a), out);
    document back;
    const value v = amf3 ? decode_amf3(bytes(out), back) : decode_amf0(bytes(out), back);
    ASSERT_TRUE(equivalent(v, value::of(a))) << amf3;
    const auto& dense = v.as_array()->dense;
    std::vector<node*> first(n, nullptr);
    for (std::size_t k = 0; k < order.size(); ++k) {
      auto& seen = first[static_cast<std::size_t>(order[k])];
      if (!seen) seen = dense[k].as_node();
      EXPECT_EQ(dense[k].as_node(), seen) << amf3 << " at " << k;
    }
  }
}

// An encoder keeps its reference tables across writes while the caller appends to the same
// string in between: each write takes the string as the caller left it, and what the caller
// adds after the last write stays when the encoder goes.
TEST(Encode, AnEncoderAppendsAfterWhatTheCallerAdded) {
  document doc;
  std::string out = "<";
  {
    encoder e(out);
    e.write_amf3(doc.string("abc"));
    out += "|";
    e.write_amf3(doc.string("abc"));
    out += ">";
  }
  EXPECT_EQ(out, std::string("<\x06\x07"
                             "abc|\x06\x00>",
                             10));
}

}  // namespace
}  // namespace amf::test
