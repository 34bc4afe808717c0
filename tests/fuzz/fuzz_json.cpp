// libFuzzer target: the typed-JSON reader (amf-json.md). Any JSON text; what the reader builds,
// as AMF0 and as AMF3, must encode, decode again, and encode to the same bytes.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  for (const bool amf3 : {false, true}) {
    amf::document doc;
    amf::json::reader r(doc);
    amf::value v;
    try {
      v = amf3 ? r.amf3(j) : r.amf0(j);
    } catch (const std::exception&) {
      continue;  // not a value the reader accepts: it said so
    }
    std::string out;
    amf3 ? amf::encode_amf3(v, out) : amf::encode_amf0(v, out);
    amf::document doc2;
    amf::decode_error ec;
    const amf::value back =
        amf3 ? amf::decode_amf3(amf::as_bytes(out), doc2, ec, amf::fuzz::options())
             : amf::decode_amf0(amf::as_bytes(out), doc2, ec, amf::fuzz::options());
    if (ec) amf::fuzz::die("what the JSON reader built does not decode once encoded");
    std::string again;
    amf3 ? amf::encode_amf3(back, again) : amf::encode_amf0(back, again);
    if (again != out) amf::fuzz::die("encode, decode, encode: the two encodings differ");
  }
  return 0;
}
