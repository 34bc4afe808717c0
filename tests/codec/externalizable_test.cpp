#include "amf/externalizable.hpp"

#include <gtest/gtest.h>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

TEST(Externalizable, ArrayCollectionIsOneValueAndInTheObjectTable) {
  // [ac, ac] with ac = ArrayCollection(["one"]): the second is object reference 1.
  const std::string in =
      hex("0905 01 0a07 43 666c65782e6d6573736167696e672e696f2e4172726179436f6c6c656374696f6e"
          "0903 01 0607 6f6e65 0a02");
  document doc;
  value v = decode_amf3(bytes(in), doc);
  auto* a = v.as_array();
  ASSERT_EQ(a->dense.size(), 2u);
  auto* ac = a->dense[0].as_external();
  ASSERT_NE(ac, nullptr);
  EXPECT_EQ(ac->layout, external_node::form::single);
  EXPECT_EQ(ac->payload.as_array()->dense[0].as_string(), "one");
  EXPECT_EQ(a->dense[1].as_node(), ac);
  std::string out;
  encode_amf3(v, out);
  EXPECT_EQ(out, in);
}

TEST(Externalizable, UnknownClassFailsUnlessKeptRaw) {
  const std::string in = hex("0903 01 0a07 07 616263 0102 0a00");
  document doc;
  decode_error ec;
  decode_amf3(bytes(in), doc, ec);
  EXPECT_EQ(ec.code, errc::unknown_externalizable);
  EXPECT_EQ(ec.offset, 3u);
  decode_options o;
  o.keep_unknown_externals = true;
  value v = decode_amf3(bytes(in), doc, o);
  auto* e = v.as_array()->dense[0].as_external();
  EXPECT_EQ(e->layout, external_node::form::raw);
  EXPECT_EQ(json::to_hex(e->raw), "01020a00");
}

// The payload of Red5's echo ExternalizableClass, in its writeExternal order.
std::vector<op_spec> red5_layout() {
  using k = external_op;
  return {{k::boolean},
          {k::boolean},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::byte},
          {k::double_},
          {k::float_},
          {k::int_},
          {k::int_},
          {k::int_},
          {k::multi_byte, 7, "iso-8859-1"},
          {k::multi_byte, 14, "utf-8"},
          {k::object},
          {k::short_},
          {k::short_},
          {k::short_},
          {k::unsigned_int},
          {k::unsigned_int},
          {k::utf},
          {k::utf_bytes, 12}};
}

TEST(Externalizable, OpLayoutReadsAndWritesIDataInputCalls) {
  class_registry classes = class_registry::builtin();
  classes.add("org.red5.demos.echo.ExternalizableClass", ops_codec(red5_layout()));
  decode_options o;
  o.classes = &classes;
  const std::string payload = hex(
      "01 00 00 ff 01 7f 81 3ff0000000000000 40000000 00000000 ffffffff 00000001"
      "e4f6fcc4d6dcdf c3a4c3b6c3bcc384c396c39cc39f"
      "0907 01 0403 0607 6f6e65 05 3ff0000000000000"
      "0000 ffff 0001 00000000 00000001 000c 48656c6c6f20776f726c6421 48656c6c6f20776f726c6421");
  const std::string in =
      hex("0a07 4f "
          "6f72672e726564352e64656d6f732e6563686f2e45787465726e616c697a61626c65436c617373") +
      payload;
  document doc;
  value v = decode_amf3(bytes(in), doc, o);
  auto* e = v.as_external();
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->ops.size(), 22u);
  EXPECT_EQ(e->ops[5].val.as_int(), 127);
  EXPECT_EQ(e->ops[6].val.as_int(), -127);
  EXPECT_EQ(e->ops[8].val.as_double(), 2.0);
  EXPECT_EQ(e->ops[10].val.as_int(), -1);
  EXPECT_EQ(e->ops[12].val.as_string(), "\xc3\xa4\xc3\xb6\xc3\xbc\xc3\x84\xc3\x96\xc3\x9c\xc3\x9f");
  EXPECT_EQ(e->ops[13].val.as_string(), e->ops[12].val.as_string());
  EXPECT_EQ(e->ops[14].val.as_array()->dense[1].as_string(), "one");
  EXPECT_EQ(e->ops[16].val.as_int(), -1);
  EXPECT_EQ(e->ops[20].val.as_string(), "Hello world!");
  std::string out;
  encode_amf3(v, out);
  EXPECT_EQ(json::to_hex(bytes(out)), json::to_hex(bytes(in)));
}

TEST(Externalizable, SmallMessageFlags) {
  // DSK: abstract flags 0x81 0x03 (body; next byte: clientIdBytes, messageIdBytes) ...
  const std::string id(16, '\x11');
  const std::string in =
      hex("0a07 07 44534b 81 03 0603 78 0c21") + id + hex("0c21") + id + hex("00 00");
  document doc;
  value v = decode_amf3(bytes(in), doc);
  auto* e = v.as_external();
  ASSERT_NE(e, nullptr);
  auto& fields = e->payload.as_object()->dynamic;
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0].name, "body");
  EXPECT_EQ(fields[1].name, "clientIdBytes");
  EXPECT_EQ(fields[2].name, "messageIdBytes");
  std::string out;
  encode_amf3(v, out);
  EXPECT_EQ(out, in);

  // An unassigned bit up to 5 is read and dropped; bit 6 there is an error.
  const std::string dropped = hex("0a07 07 44534b 81 04 0603 78 0601 00 00");
  document doc2;
  value d = decode_amf3(bytes(dropped), doc2);
  EXPECT_EQ(d.as_external()->payload.as_object()->dynamic.size(), 1u);
  const std::string bad = hex("0a07 07 44534b 80 40 01 00 00");
  decode_error ec;
  decode_amf3(bytes(bad), doc2, ec);
  EXPECT_EQ(ec.code, errc::bad_external);
}

}  // namespace
}  // namespace amf::test
