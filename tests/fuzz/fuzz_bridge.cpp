// libFuzzer target: the bridge's plain JSON (bridge/plain_json.hpp), both ways. Input that is
// JSON is what a backend may answer: it maps to AMF, encodes, decodes, and maps back to the
// same JSON as once through. Other input is AMF3 from a client: it maps to JSON or is refused
// with mapping_error (a cycle, too deep, too large), never anything else.
#include "amfgate/bridge/plain_json.hpp"
#include "fuzz_common.hpp"

namespace {
const amfgate::bridge::mapping_limits limits{64, 1 << 20};
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using amfgate::bridge::mapping_error;
  const auto j = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (!j.is_discarded()) {
    amf::document doc;
    amf::value v;
    try {
      v = amfgate::bridge::from_plain(doc, j, limits);
    } catch (const mapping_error&) {
      return 0;  // a malformed _bytes or _date, or too deep: said so
    }
    std::string bytes;
    amf::encode_amf3(v, bytes);
    amf::document doc2;
    amf::decode_error ec;
    const amf::value back = amf::decode_amf3(amf::as_bytes(bytes), doc2, ec, amf::fuzz::options());
    if (ec) amf::fuzz::die("what the mapping built does not decode once encoded");
    try {
      const auto once = amfgate::bridge::to_plain(v, limits);
      if (amfgate::bridge::to_plain(back, limits) != once) {
        amf::fuzz::die("the JSON of a value differs after an AMF3 round trip");
      }
    } catch (const mapping_error&) {
      // larger than the limit once mapped (every "_bytes" grows by a third): said so
    }
    return 0;
  }
  amf::document doc;
  amf::decode_error ec;
  const amf::value v = amf::decode_amf3({reinterpret_cast<const std::byte*>(data), size}, doc, ec,
                                        amf::fuzz::options());
  if (ec) return 0;
  try {
    (void)amfgate::bridge::to_plain(v, limits);
  } catch (const mapping_error&) {
  }
  return 0;
}
