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

TEST(Externalizable, OpLayoutReadsAndWritesIDataInputCalls) {
  using k = external_op;
  class_registry classes = class_registry::builtin();
  classes.add("Ops", ops_codec({{k::boolean},
                                {k::byte},
                                {k::unsigned_short},
                                {k::float_},
                                {k::unsigned_int},
                                {k::multi_byte, 3, "iso-8859-1"},
                                {k::object},
                                {k::utf},
                                {k::utf_bytes, 2}}));
  decode_options o;
  o.classes = &classes;
  const std::string in =
      hex("0a07 07 4f7073"            // externalizable traits, alias "Ops"
          "01 81 ffff 40000000"       // true, -127, 65535, 2.0f
          "ffffffff e4f6fc"           // 4294967295, "äöü" in Latin-1
          "0905 01 0403 0607 6f6e65"  // [3, "one"]
          "0002 6869 6f6b");          // writeUTF("hi"), writeUTFBytes("ok")
  document doc;
  value v = decode_amf3(bytes(in), doc, o);
  auto* e = v.as_external();
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->ops.size(), 9u);
  EXPECT_TRUE(e->ops[0].val.as_bool());
  EXPECT_EQ(e->ops[1].val.as_int(), -127);
  EXPECT_EQ(e->ops[2].val.as_int(), 65535);
  EXPECT_EQ(e->ops[3].val.as_double(), 2.0);
  EXPECT_EQ(e->ops[4].val.as_double(), 4294967295.0);
  EXPECT_EQ(e->ops[5].val.as_string(), "\xc3\xa4\xc3\xb6\xc3\xbc");  // as UTF-8
  EXPECT_EQ(e->ops[6].val.as_array()->dense[1].as_string(), "one");
  EXPECT_EQ(e->ops[7].val.as_string(), "hi");
  EXPECT_EQ(e->ops[8].val.as_string(), "ok");
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
