// Conformance against the shared corpus: real bytes written by other implementations
// (../shared/corpus/MANIFEST.json) and PyAMF's own test vectors (pyamf/vectors.json).
#include <gtest/gtest.h>

#include <iostream>

#include "amf/decode.hpp"
#include "amf/encode.hpp"
#include "amf/packet.hpp"
#include "corpus.hpp"

namespace amf::test {
namespace {

using json::ordered_json;

decode_options corpus_options() {
  decode_options o;
  o.classes = &corpus_classes();
  o.keep_unknown_externals = true;
  return o;
}

std::string hex_bytes(const std::string& h) {
  return json::from_hex(h);
}

// Decodes every value of `in` (a packet, or consecutive bare values) and renders it; the
// first `skip` bytes are a context prefix whose values are read and rendered, not returned.
struct decoded {
  ordered_json rendering;
  std::string error;
};

decoded decode_and_render(const std::string& in, const ordered_json& version, std::size_t skip,
                          bool stream, document& doc) {
  decoded out;
  decode_error ec;
  json::writer w;
  if (version == "envelope") {
    packet p = decode_packet(bytes(in), doc, ec, corpus_options());
    if (ec) return {{}, ec.message()};
    out.rendering = w.packet(p);
    return out;
  }
  const bool amf3 = version == 3;
  decoder d(bytes(in), doc, corpus_options());
  auto next = [&] {
    value v = amf3 ? d.read_amf3(ec) : d.read_amf0(ec);
    return amf3 ? w.amf3(v) : w.amf0(v);
  };
  while (d.offset() < skip && !ec) next();
  if (ec) return {{}, "prefix: " + ec.message()};
  if (stream) {
    out.rendering = ordered_json{{"$stream", ordered_json::array()}};
    while (!d.at_end() && !ec) out.rendering["$stream"].push_back(next());
  } else {
    out.rendering = next();
    if (!ec && !d.at_end()) return {{}, "trailing bytes at " + std::to_string(d.offset())};
  }
  if (ec) return {{}, ec.message()};
  return out;
}

// Builds values from `expected` and encodes them after the values of `prefix` (whose
// reference tables seed both the JSON reader and the encoder). Returns the bytes after
// the prefix.
std::string encode_rendering(const ordered_json& expected, const ordered_json& version,
                             const std::string& prefix) {
  document doc;
  std::string out;
  if (version == "envelope") {
    json::reader r(doc, &corpus_classes());
    encode_packet(r.packet(expected), out, length_fields::as_given);
    return out;
  }
  const bool amf3 = version == 3;
  encoder e(out);
  decoder d(bytes(prefix), doc, corpus_options());
  decode_error ec;
  while (!d.at_end()) {
    value v = amf3 ? d.read_amf3(ec) : d.read_amf0(ec);
    if (ec) throw std::runtime_error("prefix: " + ec.message());
    amf3 ? e.write_amf3(v) : e.write_amf0(v);
  }
  if (out != prefix) throw std::runtime_error("prefix does not re-encode to itself");
  out.clear();
  json::reader r(doc, &corpus_classes());
  r.seed(d.amf0_objects(), d.amf3_objects());
  const bool stream = expected.is_object() && expected.contains("$stream");
  for (const auto& v : stream ? expected["$stream"] : ordered_json::array({expected})) {
    amf3 ? e.write_amf3(r.amf3(v)) : e.write_amf0(r.amf0(v));
  }
  return out;
}

struct tally {
  int passed = 0, total = 0;
  void check(bool ok, const std::string& id, const std::string& why) {
    ++total;
    if (ok) {
      ++passed;
    } else {
      ADD_FAILURE() << id << ": " << why;
    }
  }
};

TEST(Conformance, ManifestFixtures) {
  const auto manifest = read_json(shared_dir() + "/corpus/MANIFEST.json");
  tally decoding, reencoding;
  for (const auto& f : manifest["fixtures"]) {
    const std::string name = f["file"];
    if (f["expected_status"] != "ok" || f["amf_version"].is_null()) continue;
    const std::string in = read_file(shared_dir() + "/corpus/" + name);
    ordered_json expected = f["expected"];
    if (expected.is_object() && expected.contains("$see_file")) {
      expected = read_json(shared_dir() + "/corpus/" + expected["$see_file"].get<std::string>());
    }
    document doc;
    auto got = decode_and_render(in, f["amf_version"], 0, false, doc);
    decoding.check(got.error.empty() && same_rendering(got.rendering, expected), name,
                   got.error.empty() ? "decoded to " + got.rendering.dump() : got.error);
    if (f.value("reencode_identical", false)) {
      std::string out;
      try {
        out = encode_rendering(expected, f["amf_version"], "");
      } catch (const std::exception& e) {
        out = std::string("exception: ") + e.what();
      }
      reencoding.check(
          out == in, name,
          "re-encoded to " + json::to_hex(bytes(out)) + ", file " + json::to_hex(bytes(in)));
    }
  }
  std::cout << "corpus fixtures: decoded " << decoding.passed << " of " << decoding.total
            << ", re-encoded identically " << reencoding.passed << " of " << reencoding.total
            << "\n";
  EXPECT_GT(decoding.total, 70);
}

TEST(Conformance, PyamfVectors) {
  const auto vectors = read_json(shared_dir() + "/corpus/pyamf/vectors.json")["vectors"];
  tally t;
  for (const auto& v : vectors) {
    const std::string id = v["id"];
    const std::string prefix = hex_bytes(v.value("context_prefix_hex", ""));
    const std::string hex = hex_bytes(v["hex"]);
    const auto& expected = v["expected"];
    const bool stream = expected.is_object() && expected.contains("$stream");
    if (v["direction"] == "decode") {
      document doc;
      auto got = decode_and_render(prefix + hex, v["amf_version"], prefix.size(), stream, doc);
      t.check(got.error.empty() && same_rendering(got.rendering, expected), id,
              got.error.empty() ? "decoded to " + got.rendering.dump() : got.error);
    } else {
      std::string out;
      try {
        out = encode_rendering(expected, v["amf_version"], prefix);
      } catch (const std::exception& e) {
        out = std::string("exception: ") + e.what();
      }
      t.check(out == hex, id, "encoded to " + json::to_hex(bytes(out)));
    }
  }
  std::cout << "pyamf vectors: " << t.passed << " of " << t.total << " passed\n";
  EXPECT_EQ(t.total, 304);
}

}  // namespace
}  // namespace amf::test

namespace amf::test {
namespace {

// Every corpus input, as {name, bytes, amf_version}.
struct input {
  std::string name, bytes;
  ordered_json version;
};
std::vector<input> corpus_inputs() {
  std::vector<input> all;
  const auto manifest = read_json(shared_dir() + "/corpus/MANIFEST.json");
  for (const auto& f : manifest["fixtures"]) {
    if (f["amf_version"].is_null()) continue;
    all.push_back({f["file"], read_file(shared_dir() + "/corpus/" + f["file"].get<std::string>()),
                   f["amf_version"]});
  }
  const auto vectors = read_json(shared_dir() + "/corpus/pyamf/vectors.json");
  for (const auto& v : vectors["vectors"]) {
    if (v.contains("context_prefix_hex") || v["expected"].contains("$stream")) continue;
    if (v["id"] == "pyamf-0247" || v["id"] == "pyamf-0256") continue;  // raw external payload
    all.push_back({v["id"], json::from_hex(v["hex"].get<std::string>()), v["amf_version"]});
  }
  return all;
}

decode_error decode_any(const std::string& in, const ordered_json& version, document& doc,
                        value& out, packet& p) {
  decode_error ec;
  decode_options o;
  o.classes = &corpus_classes();
  if (version == "envelope") {
    p = decode_packet(bytes(in), doc, ec, o);
  } else {
    out = version == 3 ? decode_amf3(bytes(in), doc, ec, o) : decode_amf0(bytes(in), doc, ec, o);
  }
  return ec;
}

TEST(Conformance, EveryProperPrefixFailsCleanly) {
  std::size_t prefixes = 0;
  for (const auto& c : corpus_inputs()) {
    for (std::size_t n = 0; n < c.bytes.size(); ++n) {
      const std::string prefix = c.bytes.substr(0, n);
      document doc;
      value v;
      packet p;
      decode_error ec = decode_any(prefix, c.version, doc, v, p);
      ASSERT_TRUE(ec) << c.name << " decoded from its first " << n << " bytes";
      ASSERT_LE(ec.offset, n) << c.name << ": " << ec.message();
      ++prefixes;
    }
  }
  std::cout << "proper prefixes rejected: " << prefixes << "\n";
}

TEST(Conformance, DecodedValuesReencodeToTheirBytes) {
  const auto manifest = read_json(shared_dir() + "/corpus/MANIFEST.json");
  for (const auto& f : manifest["fixtures"]) {
    if (f["amf_version"].is_null() || !f.value("reencode_identical", false)) continue;
    const std::string in = read_file(shared_dir() + "/corpus/" + f["file"].get<std::string>());
    document doc;
    value v;
    packet p;
    ASSERT_FALSE(decode_any(in, f["amf_version"], doc, v, p)) << f["file"];
    std::string out;
    if (f["amf_version"] == "envelope") {
      encode_packet(p, out, length_fields::as_given);
    } else {
      f["amf_version"] == 3 ? encode_amf3(v, out) : encode_amf0(v, out);
    }
    EXPECT_EQ(json::to_hex(bytes(out)), json::to_hex(bytes(in))) << f["file"];
  }
}

}  // namespace
}  // namespace amf::test
