#include "amf/packet.hpp"

#include <gtest/gtest.h>

#include "amf/encode.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

TEST(Packet, DecodesARequestAndIgnoresLengthFields) {
  // version 0, one header "h" (length field 6 though it is 5), one body echo("hi") with
  // a length field of 0.
  const std::string in =
      hex("0000 0001 0001 68 00 00000006 0a00000000"
          "0001 0004 6563686f 0002 2f31 00000000 0a00000001 02 0002 6869");
  document doc;
  packet p = decode_packet(bytes(in), doc);
  EXPECT_EQ(p.version, 0);
  ASSERT_EQ(p.headers.size(), 1u);
  EXPECT_EQ(p.headers[0].name, "h");
  EXPECT_EQ(p.headers[0].length, 6u);
  ASSERT_EQ(p.bodies.size(), 1u);
  EXPECT_EQ(p.bodies[0].target, "echo");
  EXPECT_EQ(p.bodies[0].response, "/1");
  EXPECT_TRUE(p.bodies[0].is_request());
  EXPECT_EQ(p.bodies[0].val.as_array()->dense[0].as_string(), "hi");

  std::string given, computed;
  encode_packet(p, given, length_fields::as_given);
  EXPECT_EQ(given, in);
  encode_packet(p, computed);
  EXPECT_EQ(json::to_hex(bytes(computed.substr(29, 4))), "0000000a");
}

TEST(Packet, TablesResetPerBody) {
  // Body 2 refers to AMF0 object 0 of body 1: out of its own table.
  const std::string in =
      hex("0000 0000 0002"
          "0001 61 0002 2f31 ffffffff 0a00000001 03 0000 09"
          "0001 62 0002 2f32 ffffffff 0a00000001 07 0000");
  document doc;
  decode_error ec;
  decode_packet(bytes(in), doc, ec);
  EXPECT_EQ(ec.code, errc::bad_reference);
  EXPECT_EQ(ec.offset, 42u);
}

TEST(Packet, ResponsesCountTheirTopLevelArray) {
  EXPECT_FALSE((body{"/1/onResult", "null", 0, {}}.is_request()));
  EXPECT_FALSE((body{"/1/onStatus", "", 0, {}}.is_request()));
  EXPECT_TRUE((body{"null", "/3", 0, {}}.is_request()));
  // [{}, reference 0]: in a response, reference 0 is the top-level array itself; in a request
  // the argument array is not in the table, so reference 0 is the object.
  const std::string value = "ffffffff 0a00000002 03 0000 09 07 0000";
  document doc;
  const packet response = decode_packet(
      bytes(hex("0000 0000 0001 000b 2f312f6f6e526573756c74 0004 6e756c6c " + value)), doc);
  const auto* top = response.bodies.at(0).val.as_array();
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->dense.at(1).as_array(), top);
  const packet request =
      decode_packet(bytes(hex("0000 0000 0001 0005 5376632e6d 0002 2f31 " + value)), doc);
  const auto* args = request.bodies.at(0).val.as_array();
  ASSERT_NE(args, nullptr);
  ASSERT_NE(args->dense.at(1).as_object(), nullptr);
  EXPECT_EQ(args->dense.at(1).as_object(), args->dense.at(0).as_object());
}

TEST(Packet, BadVersionAndTruncation) {
  document doc;
  decode_error ec;
  std::string in = hex("0002 0000 0000");
  decode_packet(bytes(in), doc, ec);
  EXPECT_EQ(ec.code, errc::bad_packet_version);
  EXPECT_EQ(ec.offset, 0u);
  in = hex("0003 0000 0001 0001");
  decode_packet(bytes(in), doc, ec);
  EXPECT_EQ(ec.code, errc::length_exceeds_input);
}

TEST(Packet, OneAmf3ContextAcrossSwitchesInABody) {
  // [11 06 03 "a", 11 06 00]: the second switch refers to the first one's string.
  const std::string in =
      hex("0003 0000 0001 0001 78 0002 2f31 ffffffff 0a00000002 11 0603 61 11 0600");
  document doc;
  packet p = decode_packet(bytes(in), doc);
  auto* args = p.bodies[0].val.as_array();
  EXPECT_EQ(args->dense[1].as_string(), "a");
  EXPECT_TRUE(args->dense[1].has_flag(value::avmplus));
  std::string out;
  encode_packet(p, out, length_fields::as_given);
  EXPECT_EQ(out, in);
}

}  // namespace
}  // namespace amf::test
