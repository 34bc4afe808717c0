#include "cases.hpp"

#include <zlib.h>

#include <stdexcept>

#include "amf/decode.hpp"
#include "amf/externalizable.hpp"

namespace amfgate::echotest {

using namespace detail;
using amf::document;
using amf::value;

namespace {

value external(document& doc, const char* alias, bool dynamic, value payload) {
  amf::traits* t = doc.make_traits(alias, dynamic);
  t->externalizable = true;
  amf::external_node* e = doc.external(t);
  e->layout = amf::external_node::form::single;
  e->payload = payload;
  return value::of(e);
}

// Red5's ExternalizableClass.writeExternal, as IDataOutput calls.
value red5_externalizable(document& doc) {
  amf::traits* t = doc.make_traits("org.red5.demos.echo.ExternalizableClass", false);
  t->externalizable = true;
  amf::external_node* e = doc.external(t);
  e->layout = amf::external_node::form::ops;
  using k = amf::external_op;
  auto op = [&](k::kind_t kind, value v, std::uint32_t length = 0, const char* charset = "") {
    e->ops.push_back({kind, length, doc.copy(charset), v});
  };
  const std::string umlauts = "\xc3\xa4\xc3\xb6\xc3\xbc\xc3\x84\xc3\x96\xc3\x9c\xc3\x9f";
  op(k::boolean, value::boolean(true));
  op(k::boolean, value::boolean(false));
  for (int b : {0, -1, 1, 127, -127}) op(k::byte, value::integer(b));
  op(k::double_, value::number(1.0));
  op(k::float_, value::number(2.0));
  for (int i : {0, -1, 1}) op(k::int_, value::integer(i));
  op(k::multi_byte, doc.string(umlauts), 7, "iso-8859-1");
  op(k::multi_byte, doc.string(umlauts), 14, "utf-8");
  op(k::object, array(doc, {value::integer(1), doc.string("one"), value::integer(1)}));
  for (int s : {0, -1, 1}) op(k::short_, value::integer(s));
  for (double u : {0.0, 1.0}) op(k::unsigned_int, value::number(u));
  op(k::utf, doc.string("Hello world!"));
  op(k::utf_bytes, doc.string("Hello world!"), 12);
  return value::of(e);
}

// zlib's compress(), as Flash's ByteArray.compress() writes it.
std::string zlib(std::string_view in) {
  uLongf size = compressBound(static_cast<uLong>(in.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK) {
    throw std::runtime_error("zlib compress failed");
  }
  out.resize(size);
  return out;
}

// The EchoTest's picture: an 80x80 BitmapData (here a red disc on transparent white) encoded
// as mx.graphics.codec.PNGEncoder does (8-bit RGBA, filter 0 on every row), then compressed.
value png_bytes(document& doc) {
  constexpr std::uint32_t side = 80;
  auto be32 = [](std::string& s, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>(v >> shift);
  };
  std::string png = "\x89PNG\r\n\x1a\n";
  auto chunk = [&](std::string_view type, const std::string& data) {
    be32(png, static_cast<std::uint32_t>(data.size()));
    const std::string body = std::string(type) + data;
    png += body;
    be32(png, static_cast<std::uint32_t>(
                  crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
  };
  std::string header;
  be32(header, side);
  be32(header, side);
  header += std::string("\x08\x06\x00\x00\x00", 5);  // 8 bits, RGBA, deflate, no interlace
  std::string pixels;
  for (std::uint32_t y = 0; y < side; ++y) {
    pixels += '\0';
    for (std::uint32_t x = 0; x < side; ++x) {
      const int dx = static_cast<int>(x) - 40, dy = static_cast<int>(y) - 40;
      const bool disc = dx * dx + dy * dy < 30 * 30;
      pixels += disc ? std::string("\xff\x00\x00\xff", 4) : std::string("\xff\xff\xff\x00", 4);
    }
  }
  chunk("IHDR", header);
  chunk("IDAT", zlib(pixels));
  chunk("IEND", "");
  return value::of(doc.bytes(amf::as_bytes(zlib(png))));
}

}  // namespace

std::vector<echo_case> all_cases() {
  std::vector<echo_case> c;
  auto add = [&](std::string name, bool amf3_only, std::function<value(document&, bool)> make) {
    c.push_back({std::move(name), amf3_only, std::move(make)});
  };
  add("null", false, [](document&, bool) { return value::null(); });
  add("undefined", false, [](document&, bool) { return value::undefined(); });
  add("true", false, [](document&, bool) { return value::boolean(true); });
  add("false", false, [](document&, bool) { return value::boolean(false); });
  add("empty string", false, [](document& d, bool) { return d.string(""); });
  add("Hello world!", false, [](document& d, bool) { return d.string("Hello world!"); });
  add("string array", false, [](document& d, bool) {
    return array(d, {d.string("test1"), d.string("test2"), d.string("test3"), d.string("test4")});
  });
  add("10,000 characters", false, [](document& d, bool) { return repeated_digits(d, 10'000); });
  add("100,000 characters", false, [](document& d, bool) { return repeated_digits(d, 100'000); });
  add("1,000,000 characters", false,
      [](document& d, bool) { return repeated_digits(d, 1'000'000); });
  struct named_number {
    const char* name;
    double v;
  };
  static const named_number numbers[] = {
      {"0", 0},
      {"1", 1},
      {"-1", -1},
      {"256", 256},
      {"-256", -256},
      {"65536", 65536},
      {"-65536", -65536},
      {"NaN", std::numeric_limits<double>::quiet_NaN()},
      {"Number.MAX_VALUE", std::numeric_limits<double>::max()},
      {"Number.MIN_VALUE", std::numeric_limits<double>::denorm_min()},
      {"0.0", 0.0},
      {"1.5", 1.5},
      {"-1.5", -1.5},
      {"uint(0)", 0},
      {"Infinity", std::numeric_limits<double>::infinity()},
      {"-Infinity", -std::numeric_limits<double>::infinity()},
      {"-0.0", -0.0},
  };
  for (const auto& n : numbers) {
    const double v = n.v;
    add(std::string("number ") + n.name, false, [v](document&, bool a3) { return number(v, a3); });
  }
  add("[]", false, [](document& d, bool) { return array(d, {}); });
  add("[1]", false, [](document& d, bool a3) { return array(d, {number(1, a3)}); });
  add("[1,2]", false, [](document& d, bool a3) {
    return array(d, {number(1, a3), number(2, a3)});
  });
  add("[1,2,3]", false, [](document& d, bool a3) {
    return array(d, {number(1, a3), number(2, a3), number(3, a3)});
  });
  add("[1,2,[1,2]]", false, [](document& d, bool a3) {
    return array(d, {number(1, a3), number(2, a3), array(d, {number(1, a3), number(2, a3)})});
  });
  add("sparse a[0]=1, a[100]=100", false, [](document& d, bool a3) {
    amf::array_node* a = d.array(101);
    a->dense.resize(101);
    a->dense[0] = number(1, a3);
    a->dense[100] = number(100, a3);
    return value::of(a);
  });
  add("[1] with a[\"one\"]=1", false, [](document& d, bool a3) {
    if (!a3) {  // as Flash sends it: an ECMA array that includes its length
      auto* e = d.create<amf::array_node>(amf::type::ecma_array, d.resource());
      e->ecma_count = 1;
      e->assoc.push_back({"length", value::number(1)});
      e->assoc.push_back({"0", value::number(1)});
      e->assoc.push_back({"one", value::number(1)});
      return value::of(e);
    }
    amf::array_node* a = d.array();
    a->dense.push_back(value::integer(1));
    a->assoc.push_back({"one", value::integer(1)});
    return value::of(a);
  });
  add("{a:\"foo\", b:\"bar\"}", false, [](document& d, bool) {
    return anonymous(d, {{"a", d.string("foo")}, {"b", d.string("bar")}});
  });
  add("[o,o]", false, [](document& d, bool) {
    return twice(d, anonymous(d, {{"a", d.string("foo")}, {"b", d.string("bar")}}));
  });
  add("new Date()", false, [](document& d, bool) { return d.date(1700000123456.0, 0x01a4); });
  add("[d,d]", false, [](document& d, bool) { return twice(d, d.date(1700000123456.0, 0x01a4)); });
  add("XMLDocument", false,
      [](document& d, bool) { return value::of(d.xml(amf::type::xml_document, employees)); });
  add("[x,x] XMLDocument", false, [](document& d, bool a3) {
    // AMF0 has no reference to an XMLDocument: Flash writes the document twice.
    if (!a3) {
      return array(d, {value::of(d.xml(amf::type::xml_document, employees)),
                       value::of(d.xml(amf::type::xml_document, employees))});
    }
    return twice(d, value::of(d.xml(amf::type::xml_document, employees)));
  });
  add("EchoClass (unregistered)", false, [](document& d, bool a3) {
    return anonymous(d, {{"attr1", d.string("one")}, {"attr2", number(1, a3)}});
  });
  add("[c,c] EchoClass", false, [](document& d, bool a3) {
    return twice(d, anonymous(d, {{"attr1", d.string("one")}, {"attr2", number(1, a3)}}));
  });
  add("RemoteClass", false, [](document& d, bool a3) { return remote(d, a3, "one", 2); });
  add("[RemoteClass x2]", false, [](document& d, bool a3) {
    return array(d, {remote(d, a3, "one", 1), remote(d, a3, "two", 2)});
  });
  add("RemoteClass 1234567890", false,
      [](document& d, bool a3) { return remote(d, a3, "three", 1234567890); });
  add("RemoteClass 1185292800000", false,
      [](document& d, bool a3) { return remote(d, a3, "four", 1185292800000.0); });
  add("E4X XML", true,
      [](document& d, bool) { return value::of(d.xml(amf::type::xml, employees)); });
  add("[x,x] E4X XML", true,
      [](document& d, bool) { return twice(d, value::of(d.xml(amf::type::xml, employees))); });
  add("ExternalizableClass", true, [](document& d, bool) { return red5_externalizable(d); });
  add("[e,e] ExternalizableClass", true,
      [](document& d, bool) { return twice(d, red5_externalizable(d)); });
  add("ArrayCollection", true, [](document& d, bool) {
    return external(d, "flex.messaging.io.ArrayCollection", false,
                    array(d, {d.string("one"), value::integer(123), value::null()}));
  });
  add("[ac,ac] ArrayCollection", true, [](document& d, bool) {
    return twice(d, external(d, "flex.messaging.io.ArrayCollection", false,
                             array(d, {d.string("one"), value::integer(123), value::null()})));
  });
  add("ObjectProxy", true, [](document& d, bool) {
    return external(d, "flex.messaging.io.ObjectProxy", true,
                    anonymous(d, {{"a", d.string("foo")}, {"b", value::integer(5)}}));
  });
  add("[p,p] ObjectProxy", true, [](document& d, bool) {
    return twice(d, external(d, "flex.messaging.io.ObjectProxy", true,
                             anonymous(d, {{"a", d.string("foo")}, {"b", value::integer(5)}})));
  });
  add("ByteArray", true, [](document& d, bool) { return png_bytes(d); });
  add("[b,b] ByteArray", true, [](document& d, bool) { return twice(d, png_bytes(d)); });
  add("BitmapData (unsupported)", true, [](document& d, bool) {
    return value::of(d.object(d.make_traits("flash.display.BitmapData", false)));
  });
  add("[bmp,bmp] BitmapData", true, [](document& d, bool) {
    return twice(d, value::of(d.object(d.make_traits("flash.display.BitmapData", false))));
  });
  return c;
}

}  // namespace amfgate::echotest
