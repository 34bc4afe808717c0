#include "amf/decode.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "amf/encode.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

value amf3(const std::string& h, document& doc, decode_error& ec, decode_options o = {}) {
  static thread_local std::string keep;  // the input must outlive the views
  keep = hex(h);
  return decode_amf3(bytes(keep), doc, ec, o);
}

TEST(Decode, U29IntegerWidths) {
  const std::pair<const char*, std::int32_t> cases[] = {
      {"04 00", 0},
      {"04 7f", 127},
      {"04 81 00", 128},
      {"04 ff 7f", 16383},
      {"04 81 80 00", 16384},
      {"04 ff ff 7f", 2097151},
      {"04 80 c0 80 00", 2097152},
      {"04 bf ff ff ff", 268435455},
      {"04 c0 80 80 00", -268435456},
      {"04 ff ff ff ff", -1},
  };
  for (auto [h, expected] : cases) {
    document doc;
    decode_error ec;
    value v = amf3(h, doc, ec);
    ASSERT_FALSE(ec) << h << ": " << ec.message();
    EXPECT_EQ(v.kind(), type::integer) << h;
    EXPECT_EQ(v.as_int(), expected) << h;
  }
}

TEST(Decode, ScalarsOfBothFormats) {
  document doc;
  std::string in = hex("00 3f f8 00 00 00 00 00 00");
  EXPECT_EQ(decode_amf0(bytes(in), doc).as_double(), 1.5);
  in = hex("01 02");
  EXPECT_TRUE(decode_amf0(bytes(in), doc).as_bool());
  in = hex("0d");
  EXPECT_EQ(decode_amf0(bytes(in), doc).kind(), type::unsupported);
  in = hex("0c 00 00 00 02 68 69");
  value s = decode_amf0(bytes(in), doc);
  EXPECT_EQ(s.as_string(), "hi");
  EXPECT_TRUE(s.has_flag(value::long_string));
  in = hex("05 ff f8 00 00 00 00 00 00");
  EXPECT_TRUE(std::isnan(decode_amf3(bytes(in), doc).as_double()));
  in = hex("00");
  EXPECT_TRUE(decode_amf3(bytes(in), doc).is_undefined());
}

TEST(Decode, StringsAreViewsIntoTheInputUnlessCopied) {
  const std::string in = hex("06 07 61 62 63");
  document doc;
  value v = decode_amf3(bytes(in), doc);
  EXPECT_EQ(v.as_string(), "abc");
  EXPECT_EQ(v.as_string().data(), in.data() + 2);
  decode_options o;
  o.copy_strings = true;
  value c = decode_amf3(bytes(in), doc, o);
  EXPECT_EQ(c.as_string(), "abc");
  EXPECT_NE(c.as_string().data(), in.data() + 2);
}

TEST(Decode, EmptyStringIsNeverAReference) {
  // ["", "a", "a"]: the second "a" is string reference 0, so "" took no table entry.
  document doc;
  decode_error ec;
  value v = amf3("09 07 01 06 01 06 03 61 06 00", doc, ec);
  ASSERT_FALSE(ec) << ec.message();
  auto* a = v.as_array();
  ASSERT_EQ(a->dense.size(), 3u);
  EXPECT_EQ(a->dense[0].as_string(), "");
  EXPECT_EQ(a->dense[2].as_string(), "a");
}

TEST(Decode, ReferencesKeepIdentityAndCycles) {
  document doc;
  decode_error ec;
  // [o, o] with o = {} (anonymous dynamic), then a date twice.
  value v = amf3("09 09 01 0a 0b 01 01 0a 02 08 01 00 00 00 00 00 00 00 00 08 04", doc, ec);
  ASSERT_FALSE(ec) << ec.message();
  auto* a = v.as_array();
  EXPECT_EQ(a->dense[0].as_node(), a->dense[1].as_node());
  EXPECT_EQ(a->dense[2].as_node(), a->dense[3].as_node());
  EXPECT_EQ(a->dense[3].kind(), type::date);
  // o = {self: o}
  value c = amf3("0a 0b 01 09 73 65 6c 66 0a 00 01", doc, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(c.as_object()->find("self")->as_node(), c.as_node());
}

TEST(Decode, Amf0DatesAreCountedAndArgumentArraysAreNot) {
  document doc;
  // The EchoTest capture of [d, d]: the array is 0, the date 1, then reference 07 00 01.
  std::string in = hex("0a 00 00 00 02 0b 42 72 3e cc 0a 00 00 00 01 a4 07 00 01");
  value v = decode_amf0(bytes(in), doc);
  auto* a = v.as_array();
  EXPECT_EQ(a->dense[0].as_node(), a->dense[1].as_node());
  EXPECT_EQ(a->dense[0].as_date()->timezone, 0x01a4);
  // As a request's argument array the outer array is not counted: 07 00 01 is out of range.
  decoder d(bytes(in), doc);
  decode_error ec;
  d.read_amf0_arguments(ec);
  EXPECT_EQ(ec.code, errc::bad_reference);
  EXPECT_EQ(ec.offset, 16u);
}

TEST(Decode, Amf0EmptyKeyBeforeAValue) {
  // {"": "last"} then the end marker: a zero-length name followed by a value, not 0x09.
  std::string in = hex("03 00 00 02 00 04 6c 61 73 74 00 00 09");
  document doc;
  value v = decode_amf0(bytes(in), doc);
  ASSERT_EQ(v.as_object()->dynamic.size(), 1u);
  EXPECT_EQ(v.as_object()->dynamic[0].name, "");
  EXPECT_EQ(v.as_object()->dynamic[0].val.as_string(), "last");
}

struct bad_case {
  const char* hex;
  bool amf3;
  errc code;
  std::size_t offset;
};

TEST(Decode, ErrorsNameTheCodeAndOffset) {
  const bad_case cases[] = {
      {"", true, errc::truncated, 0},
      {"05 00 00", true, errc::truncated, 1},
      {"04 ff ff", true, errc::truncated, 3},
      {"12", true, errc::unknown_marker, 0},
      {"09 03 01 12", true, errc::unknown_marker, 3},
      {"04", false, errc::unknown_marker, 0},
      {"0e", false, errc::unknown_marker, 0},
      {"09", false, errc::unknown_marker, 0},
      {"06 00", true, errc::bad_reference, 1},
      {"09 05 01 0a 02", true, errc::bad_reference, 3},
      {"0a 05", true, errc::bad_reference, 0},
      {"09 03 01 0c 00", true, errc::bad_reference, 3},
      {"07 00 00", false, errc::bad_reference, 0},
      {"09 ff ff ff 7f 01", true, errc::length_exceeds_input, 5},
      {"06 09 61", true, errc::length_exceeds_input, 2},
      {"0a 00 00 00 05 05", false, errc::length_exceeds_input, 5},
      {"0d 09 00 00 00 00 01", true, errc::length_exceeds_input, 3},
      {"0a 07 07 66 6f 6f", true, errc::unknown_externalizable, 0},
      {"01 01", true, errc::trailing_bytes, 1},
      {"09 09 01 04 01 04 02 04 03 04 ff", true, errc::truncated, 11},
      {"09 03 01 08 01 00 00 00 00 00 00 00", true, errc::truncated, 5},
  };
  for (const auto& c : cases) {
    document doc;
    decode_error ec;
    const std::string in = hex(c.hex);
    if (c.amf3) {
      decode_amf3(bytes(in), doc, ec);
    } else {
      decode_amf0(bytes(in), doc, ec);
    }
    EXPECT_EQ(ec.code, c.code) << c.hex << ": " << ec.message();
    EXPECT_EQ(ec.offset, c.offset) << c.hex << ": " << ec.message();
  }
}

TEST(Decode, ThrowingFormCarriesTheError) {
  document doc;
  const std::string in = hex("12");
  try {
    decode_amf3(bytes(in), doc);
    FAIL() << "no exception";
  } catch (const decode_exception& e) {
    EXPECT_EQ(e.error().code, errc::unknown_marker);
    EXPECT_STREQ(e.what(), "unknown type marker at byte 0");
  }
}

TEST(Decode, LimitsFromTheOptions) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "090301";
  deep += "01";
  decode_options o;
  o.max_depth = 100;
  document doc;
  decode_error ec;
  amf3(deep, doc, ec, o);
  EXPECT_EQ(ec.code, errc::depth_exceeded);
  EXPECT_EQ(ec.offset, 300u);
  o = {};
  o.max_string_bytes = 2;
  amf3("06 07 61 62 63", doc, ec, o);
  EXPECT_EQ(ec.code, errc::limit_exceeded);
  o = {};
  o.max_elements = 3;
  amf3("09 07 01 01 01 01", doc, ec, o);
  EXPECT_EQ(ec.code, errc::limit_exceeded);
  EXPECT_EQ(ec.offset, 5u);
  o.max_elements = 2;  // met inside a run of integers, with bytes after it
  amf3("09 09 01 04 01 04 02 04 03 04 04", doc, ec, o);
  EXPECT_EQ(ec.code, errc::limit_exceeded);
  EXPECT_EQ(ec.offset, 5u);
  o = {};
  o.max_references = 1;
  amf3("09 05 01 09 01 01", doc, ec, o);
  EXPECT_EQ(ec.code, errc::limit_exceeded);
}

// Arrays are filled a block at a time with runs of integers read apart: values of every kind
// and width across block edges come back in order.
TEST(Decode, LongMixedArraysComeBackInOrder) {
  document built;
  auto* a = built.create<array_node>(type::array, built.resource());
  for (int i = 0; i < 1000; ++i) {
    auto n = static_cast<std::int32_t>(std::int64_t{i} * 2654435761 % (1 << 28));  // all widths
    if (i % 7 == 6) n = -n - 1;
    a->dense.push_back(i % 5 == 4   ? built.string("s" + std::to_string(i % 9))
                       : i % 5 == 3 ? value::number(i + 0.5)
                                    : value::integer(n));
  }
  std::string out;
  encode_amf3(value::of(a), out);
  document doc;
  decode_error ec;
  const value v = decode_amf3(bytes(out), doc, ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(equivalent(v, value::of(a)));
  EXPECT_EQ(v.as_array()->dense.size(), 1000u);
}

TEST(Decode, MemoryStaysWithinASmallMultipleOfTheInput) {
  // Arrays of one-byte values, many references to one big string, counts that lie.
  std::string wide = "09 " + std::string("ff ff 7f") + " 01";
  for (int i = 0; i < 20000; ++i) wide += "00";
  std::string refs = "09 ff 7f 01 06 8f 51" + std::string(2000, 'a');
  for (int i = 1; i < 16383; ++i) refs += "0600";
  const std::string cases[] = {wide, refs, "09 ff ff ff 7f 01 01",
                               "0a 7f 01 " + std::string(40, '0')};
  for (const auto& h : cases) {
    const std::string in = hex(h);
    counting_resource upstream;
    {
      document doc(256, &upstream);
      decode_error ec;
      decode_amf3(bytes(in), doc, ec);
    }
    EXPECT_LE(upstream.total, 32 * in.size() + 4096) << h.substr(0, 20);
  }
}

}  // namespace
}  // namespace amf::test
